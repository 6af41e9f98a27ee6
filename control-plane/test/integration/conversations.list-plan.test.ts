/**
 * The conversation list on generated data: the page query of each common filter must be
 * answered from an index, not a scan of the tenant's conversations. Scaled to 200,000 rows
 * here to keep CI fast; the plans are the ones a million rows get (the index order serves
 * LIMIT directly). Timings are printed, not asserted. The list's statement also counts the
 * matching rows in a subquery (the total); that count is not what is checked here.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import type { Logger } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as schema from '../../src/db/schema/index.js';
import { ConversationRepository } from '../../src/modules/conversations/repository.js';
import { listConversationsQuery } from '../../src/modules/conversations/schemas.js';
import { isolatedDatabase } from '../helpers.js';

let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
const captured: { query: string; params: unknown[] }[] = [];
let repo: ConversationRepository;
const TENANT = 'ten_plan';

beforeAll(async () => {
  iso = await isolatedDatabase(2);
  const pool = iso.database.pool;
  await pool.query(`insert into tenants (id, name, slug, plan) values ($1, 'Plan', 'plan', 'enterprise'), ('ten_other', 'Other', 'other', 'enterprise')`, [TENANT]);
  // 150,000 conversations for the tenant (20 agents, ~400 days), 50,000 for another.
  await pool.query(`
    insert into conversations (id, tenant_id, agent_id, agent_name, agent_version, channel, status, direction, provider, external_id,
                               started_at, duration_seconds, tags, outcome, cost_total_usd)
    select 'conv_' || lpad(g::text, 9, '0'),
           case when g <= 150000 then '${TENANT}' else 'ten_other' end,
           'agt_' || (g % 20), 'Agent', 1,
           case when g % 10 = 0 then 'webrtc' else 'phone' end,
           case when g % 17 = 0 then 'failed' when g % 23 = 0 then 'abandoned' else 'completed' end,
           case when g % 4 = 0 then 'outbound' else 'inbound' end,
           'twilio', 'CA' || g,
           timestamptz '2026-01-01' - (g % 400) * interval '1 day' - (g % 86400) * interval '1 second',
           g % 900,
           case when g % 50 = 0 then array['vip','booking'] when g % 7 = 0 then array['booking'] else '{}'::text[] end,
           case when g % 5 = 0 then 'resolved' when g % 11 = 0 then 'escalated' end,
           (g % 1000) / 1000.0
      from generate_series(1, 200000) g`);
  await pool.query('analyze conversations');
  const logger: Logger = { logQuery: (query, params) => void captured.push({ query, params }) };
  repo = new ConversationRepository(drizzle(pool, { schema, logger }));
}, 120_000);
afterAll(async () => iso?.drop());

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  Plans?: PlanNode[];
}

/** The page's scans: the plan's nodes outside its subqueries (the total's count is an InitPlan). */
function pageScans(node: PlanNode): string[] {
  if (node['Parent Relationship'] === 'InitPlan' || node['Parent Relationship'] === 'SubPlan') return [];
  const own = node['Relation Name'] ? [`${node['Node Type']} on ${node['Relation Name']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}`] : [];
  return [...own, ...(node.Plans ?? []).flatMap(pageScans)];
}

async function planOf(filters: Record<string, string>): Promise<{ scans: string[]; ms: number }> {
  captured.length = 0;
  await repo.list(TENANT, listConversationsQuery.parse(filters));
  const page = captured.find((c) => /\blimit\b/i.test(c.query))!;
  const res = await iso.database.pool.query(`explain (analyze, format json) ${page.query}`, page.params);
  const [explained] = res.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode; 'Execution Time': number }>;
  return { scans: pageScans(explained!.Plan), ms: explained!['Execution Time'] };
}

describe('conversation list plans on 200,000 generated conversations', () => {
  it.each([
    ['newest first', {}],
    ['one agent', { agentId: 'agt_7' }],
    ['a date range', { dateFrom: '2025-06-01', dateTo: '2025-06-30' }],
    ['an agent and a date range', { agentId: 'agt_3', dateFrom: '2025-03-01', dateTo: '2025-03-31' }],
    ['a tag', { tags: 'vip' }],
    ['status and outcome', { status: 'failed', outcome: 'resolved' }],
  ])('answers %s from an index', async (_name, filters) => {
    const { scans, ms } = await planOf(filters);
    console.info(`list ${JSON.stringify(filters)}: ${ms} ms; page: ${scans.join(', ')}`);
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.join('\n')).not.toMatch(/Seq Scan on conversations/);
    expect(scans.join('\n')).toMatch(/(Index (Only )?Scan|Bitmap Index Scan) on conversations using conversations_/);
  });
});
