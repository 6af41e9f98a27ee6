CREATE TABLE "jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"tenant_id" text NOT NULL,
	"subject_id" text NOT NULL,
	"payload" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_until" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "deleted_conversation_usage" (
	"tenant_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"day" date NOT NULL,
	"channel" text NOT NULL,
	"conversations" integer DEFAULT 0 NOT NULL,
	"duration_seconds" bigint DEFAULT 0 NOT NULL,
	"llm_input_tokens" bigint DEFAULT 0 NOT NULL,
	"llm_output_tokens" bigint DEFAULT 0 NOT NULL,
	"tts_characters" bigint DEFAULT 0 NOT NULL,
	"stt_audio_seconds" numeric(14, 2) DEFAULT 0 NOT NULL,
	"telephony_minutes" numeric(14, 4) DEFAULT 0 NOT NULL,
	"llm_usd" numeric(14, 6) DEFAULT 0 NOT NULL,
	"tts_usd" numeric(14, 6) DEFAULT 0 NOT NULL,
	"stt_usd" numeric(14, 6) DEFAULT 0 NOT NULL,
	"telephony_usd" numeric(14, 6) DEFAULT 0 NOT NULL,
	"total_usd" numeric(14, 6) DEFAULT 0 NOT NULL,
	CONSTRAINT "deleted_conversation_usage_pk" PRIMARY KEY("tenant_id","agent_id","day","channel")
);
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "recording_key" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "recording_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "deleted_conversation_usage" ADD CONSTRAINT "deleted_conversation_usage_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_kind_subject_key" ON "jobs" USING btree ("kind","subject_id");--> statement-breakpoint
CREATE INDEX "jobs_due_idx" ON "jobs" USING btree ("run_at") WHERE status IN ('pending', 'running');--> statement-breakpoint
CREATE INDEX "conversations_recording_expiry_idx" ON "conversations" USING btree ("recording_expires_at") WHERE recording_key IS NOT NULL;