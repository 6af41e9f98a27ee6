DROP INDEX "phone_numbers_e164_key";--> statement-breakpoint
ALTER TABLE "phone_numbers" ADD COLUMN "released_at" timestamp with time zone;--> statement-breakpoint
CREATE UNIQUE INDEX "phone_numbers_e164_key" ON "phone_numbers" USING btree ("phone_number") WHERE status <> 'released';