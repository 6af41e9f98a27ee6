import { Counter, Histogram, Registry } from 'prom-client';

/** Seconds; API requests and webhook attempts (which time out at 5 s). */
const DURATION_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds; jobs (post-call analysis waits on an LLM). */
const JOB_BUCKETS_S = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Outcome of one webhook attempt: the queue's verdict, or `disabled` (not sent). */
export type WebhookAttemptResult = 'delivered' | 'retry' | 'failed' | 'lease-lost' | 'disabled';
/** Outcome of one job attempt. */
export type JobAttemptResult = 'succeeded' | 'retry' | 'failed' | 'lease-lost';

/** What the webhook dispatcher reports; {@link ControlPlaneMetrics} implements it. */
export interface WebhookMetrics {
  /** One attempt finished; `latencyMs` of its HTTP request (0 when nothing was sent). */
  webhookAttempt(result: WebhookAttemptResult, latencyMs: number): void;
}

/** What the job runner reports; {@link ControlPlaneMetrics} implements it. */
export interface JobMetrics {
  /** One attempt of a job of `kind` finished after `durationMs` of its handler. */
  jobAttempt(kind: string, result: JobAttemptResult, durationMs: number): void;
}

/**
 * The control plane's Prometheus metrics, in a registry of their own (README "Metrics").
 * Labels are bounded: route patterns (never raw URLs), methods, status codes, results and
 * job kinds; never tenant, agent or conversation ids.
 */
export class ControlPlaneMetrics implements WebhookMetrics, JobMetrics {
  readonly registry = new Registry();
  private readonly httpDuration: Histogram<'method' | 'route' | 'status_code'>;
  private readonly webhookAttempts: Counter<'result'>;
  private readonly webhookDuration: Histogram<'result'>;
  private readonly jobAttempts: Counter<'kind' | 'result'>;
  private readonly jobDuration: Histogram<'kind'>;
  /**
   * `svc.telephony.api_errors{provider, method}`: a telephony provider's REST call failed.
   * The platform makes no such calls yet (Twilio reaches us over webhooks and media
   * streams), so it stays at zero until outbound calling or number provisioning arrive.
   */
  readonly telephonyApiErrors: Counter<'provider' | 'method'>;

  constructor() {
    const registers = [this.registry];
    this.httpDuration = new Histogram({ name: 'vap_http_request_duration_seconds', help: 'HTTP requests by method, route pattern and status code', labelNames: ['method', 'route', 'status_code'], buckets: DURATION_BUCKETS_S, registers });
    this.webhookAttempts = new Counter({ name: 'vap_webhook_deliveries_total', help: 'Webhook delivery attempts by result: delivered, retry (failed, another attempt is scheduled), failed (no attempt left), lease-lost, disabled', labelNames: ['result'], registers });
    this.webhookDuration = new Histogram({ name: 'vap_webhook_delivery_duration_seconds', help: 'HTTP time of webhook delivery attempts by result', labelNames: ['result'], buckets: DURATION_BUCKETS_S, registers });
    this.jobAttempts = new Counter({ name: 'vap_jobs_processed_total', help: 'Background job attempts by kind and result: succeeded, retry, failed, lease-lost', labelNames: ['kind', 'result'], registers });
    this.jobDuration = new Histogram({ name: 'vap_job_duration_seconds', help: 'Handler time of background job attempts by kind', labelNames: ['kind'], buckets: JOB_BUCKETS_S, registers });
    this.telephonyApiErrors = new Counter({ name: 'svc_telephony_api_errors_total', help: 'svc.telephony.api_errors: telephony provider REST calls that failed, by provider and method', labelNames: ['provider', 'method'], registers });
  }

  /** One answered HTTP request; `route` is the route pattern (`/api/v1/agents/:id`), `unmatched` for 404s without a route. */
  httpRequest(method: string, route: string, statusCode: number, durationMs: number): void {
    this.httpDuration.observe({ method, route, status_code: String(statusCode) }, durationMs / 1000);
  }

  webhookAttempt(result: WebhookAttemptResult, latencyMs: number): void {
    this.webhookAttempts.inc({ result });
    if (result !== 'disabled') this.webhookDuration.observe({ result }, latencyMs / 1000);
  }

  jobAttempt(kind: string, result: JobAttemptResult, durationMs: number): void {
    this.jobAttempts.inc({ kind, result });
    this.jobDuration.observe({ kind }, durationMs / 1000);
  }
}
