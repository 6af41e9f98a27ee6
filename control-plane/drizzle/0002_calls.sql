CREATE TABLE "conversation_messages" (
	"id" text PRIMARY KEY NOT NULL,
	"conversation_id" text NOT NULL,
	"seq" integer NOT NULL,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"source" text NOT NULL,
	"interrupted" boolean DEFAULT false NOT NULL,
	"duration_ms" integer NOT NULL,
	"timestamp" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"agent_name" text NOT NULL,
	"agent_version" integer NOT NULL,
	"channel" text NOT NULL,
	"status" text NOT NULL,
	"direction" text NOT NULL,
	"provider" text NOT NULL,
	"external_id" text NOT NULL,
	"caller_phone" text,
	"caller_country" text,
	"called_phone" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"gateway_id" text,
	"started_at" timestamp with time zone NOT NULL,
	"ended_at" timestamp with time zone,
	"duration_seconds" integer,
	"end_reason" text,
	"language" text,
	"costs" jsonb,
	"cost_total_usd" numeric(12, 6),
	"error" jsonb,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"outcome" text,
	"outcome_notes" text,
	"analysis" jsonb,
	"recording" jsonb,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "gateway_heartbeats" (
	"gateway_id" text PRIMARY KEY NOT NULL,
	"interval_ms" integer NOT NULL,
	"last_seen_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "transcript_turns" (
	"id" text PRIMARY KEY NOT NULL,
	"conversation_id" text NOT NULL,
	"seq" integer NOT NULL,
	"speaker" text NOT NULL,
	"text" text NOT NULL,
	"start_time" numeric(10, 3) NOT NULL,
	"end_time" numeric(10, 3) NOT NULL,
	"confidence" numeric(5, 4) NOT NULL,
	"words" jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE "phone_numbers" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"phone_number" text NOT NULL,
	"friendly_name" text,
	"country" text NOT NULL,
	"provider" text NOT NULL,
	"provider_sid" text,
	"capabilities" text[] DEFAULT '{voice}'::text[] NOT NULL,
	"assigned_agent_id" text,
	"status" text DEFAULT 'active' NOT NULL,
	"monthly_cost_usd" numeric(10, 4) DEFAULT 0 NOT NULL,
	"provisioned_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "conversation_messages" ADD CONSTRAINT "conversation_messages_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transcript_turns" ADD CONSTRAINT "transcript_turns_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD CONSTRAINT "phone_numbers_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD CONSTRAINT "phone_numbers_assigned_agent_id_agents_id_fk" FOREIGN KEY ("assigned_agent_id") REFERENCES "public"."agents"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "conversation_messages_seq_key" ON "conversation_messages" USING btree ("conversation_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_provider_external_key" ON "conversations" USING btree ("provider","external_id");--> statement-breakpoint
CREATE INDEX "conversations_tenant_started_idx" ON "conversations" USING btree ("tenant_id","started_at","id");--> statement-breakpoint
CREATE INDEX "conversations_in_progress_idx" ON "conversations" USING btree ("gateway_id") WHERE status = 'in_progress';--> statement-breakpoint
CREATE UNIQUE INDEX "transcript_turns_seq_key" ON "transcript_turns" USING btree ("conversation_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "phone_numbers_e164_key" ON "phone_numbers" USING btree ("phone_number");--> statement-breakpoint
CREATE INDEX "phone_numbers_tenant_idx" ON "phone_numbers" USING btree ("tenant_id","provisioned_at");