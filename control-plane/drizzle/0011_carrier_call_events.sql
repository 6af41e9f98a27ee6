CREATE TABLE "carrier_call_events" (
	"id" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"call_sid" text NOT NULL,
	"status" text NOT NULL,
	"detail" text,
	"duration_seconds" integer,
	"occurred_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone NOT NULL,
	"conversation_id" text,
	"tenant_id" text
);
--> statement-breakpoint
ALTER TABLE "carrier_call_events" ADD CONSTRAINT "carrier_call_events_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "carrier_call_events" ADD CONSTRAINT "carrier_call_events_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "carrier_call_events_delivery_key" ON "carrier_call_events" USING btree ("provider","call_sid","status","occurred_at");--> statement-breakpoint
CREATE INDEX "carrier_call_events_call_idx" ON "carrier_call_events" USING btree ("provider","call_sid");--> statement-breakpoint
CREATE INDEX "carrier_call_events_received_idx" ON "carrier_call_events" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "carrier_call_events_conversation_idx" ON "carrier_call_events" USING btree ("conversation_id");