ALTER TABLE "webhook_events" ADD COLUMN "conversation_id" text;--> statement-breakpoint
CREATE INDEX "webhook_events_conversation_idx" ON "webhook_events" USING btree ("conversation_id");