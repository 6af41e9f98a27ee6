CREATE TABLE "kb_chunks" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"document_id" text NOT NULL,
	"position" integer NOT NULL,
	"text" text NOT NULL,
	"token_count" integer NOT NULL,
	"page_number" integer,
	"context" text,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"embedding_model" text NOT NULL,
	"embedding" real[] NOT NULL,
	"search_vector" "tsvector" GENERATED ALWAYS AS ((to_tsvector('simple'::regconfig, (coalesce(context, '') || ' ' || text)) || to_tsvector('simple'::regconfig, regexp_replace(regexp_replace((coalesce(context, '') || ' ' || text), '([^[:space:]]*[[:alnum:]][-_./#:]+[[:alnum:]][^[:space:]]*)|[^[:space:]]+', '\1', 'g'), '[-_./#:]+', ' ', 'g') || ' ' || regexp_replace(regexp_replace((coalesce(context, '') || ' ' || text), '([^[:space:]]*[[:alnum:]][-_./#:]+[[:alnum:]][^[:space:]]*)|[^[:space:]]+', '\1', 'g'), '([[:alnum:]])[-_./#:]+(?=[[:alnum:]])', '\1', 'g')))) STORED NOT NULL
);
--> statement-breakpoint
CREATE TABLE "kb_document_agents" (
	"document_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"tenant_id" text NOT NULL,
	CONSTRAINT "kb_document_agents_document_id_agent_id_pk" PRIMARY KEY("document_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "kb_documents" (
	"id" text PRIMARY KEY NOT NULL,
	"tenant_id" text NOT NULL,
	"name" text NOT NULL,
	"filename" text NOT NULL,
	"mime_type" text NOT NULL,
	"document_type" text NOT NULL,
	"size_bytes" integer NOT NULL,
	"storage_key" text NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"status" text DEFAULT 'processing' NOT NULL,
	"progress" integer DEFAULT 0 NOT NULL,
	"error" text,
	"embedding_model" text,
	"chunk_count" integer DEFAULT 0 NOT NULL,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL,
	"processed_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "kb_documents_progress_range" CHECK ("kb_documents"."progress" BETWEEN 0 AND 100)
);
--> statement-breakpoint
CREATE TABLE "kb_embedding_models" (
	"model" text PRIMARY KEY NOT NULL,
	"dimensions" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "kb_term_stats" (
	"tenant_id" text NOT NULL,
	"embedding_model" text NOT NULL,
	"lexeme" text NOT NULL,
	"chunk_count" integer NOT NULL,
	CONSTRAINT "kb_term_stats_tenant_id_embedding_model_lexeme_pk" PRIMARY KEY("tenant_id","embedding_model","lexeme")
);
--> statement-breakpoint
ALTER TABLE "kb_chunks" ADD CONSTRAINT "kb_chunks_document_id_kb_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."kb_documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kb_document_agents" ADD CONSTRAINT "kb_document_agents_document_id_kb_documents_id_fk" FOREIGN KEY ("document_id") REFERENCES "public"."kb_documents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kb_document_agents" ADD CONSTRAINT "kb_document_agents_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kb_documents" ADD CONSTRAINT "kb_documents_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kb_term_stats" ADD CONSTRAINT "kb_term_stats_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "kb_chunks_document_position_key" ON "kb_chunks" USING btree ("document_id","position");--> statement-breakpoint
CREATE INDEX "kb_chunks_tenant_model_idx" ON "kb_chunks" USING btree ("tenant_id","embedding_model");--> statement-breakpoint
CREATE INDEX "kb_chunks_search_vector_idx" ON "kb_chunks" USING gin ("search_vector");--> statement-breakpoint
CREATE INDEX "kb_document_agents_agent_idx" ON "kb_document_agents" USING btree ("agent_id");--> statement-breakpoint
CREATE INDEX "kb_documents_tenant_uploaded_idx" ON "kb_documents" USING btree ("tenant_id","uploaded_at","id");--> statement-breakpoint
CREATE INDEX "kb_documents_tenant_model_idx" ON "kb_documents" USING btree ("tenant_id","embedding_model") WHERE status = 'indexed';