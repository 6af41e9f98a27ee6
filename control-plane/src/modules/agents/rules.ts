import { LLM_MODELS, STT_MODELS } from '@vap/shared';
import type { FieldError } from '@vap/shared';
import type { AgentConfig } from './schemas.js';

/**
 * Rules that span fields, checked on the complete configuration (after create defaults,
 * or after a PATCH is merged), so create and update enforce exactly the same thing.
 */
export function checkAgentRules(config: AgentConfig): FieldError[] {
  const errors: FieldError[] = [];
  const { llm, transcription } = config;
  if (llm.provider === 'huggingface') {
    if (!llm.endpointUrl) errors.push({ field: 'llm.endpointUrl', message: 'is required for provider huggingface' });
  } else {
    const models = LLM_MODELS[llm.provider];
    if (!models.includes(llm.model)) errors.push({ field: 'llm.model', message: `must be one of: ${models.join(', ')} (for provider ${llm.provider})` });
    if (llm.endpointUrl !== undefined) errors.push({ field: 'llm.endpointUrl', message: 'is only accepted for provider huggingface' });
    if (llm.apiKey !== undefined) errors.push({ field: 'llm.apiKey', message: 'is only accepted for provider huggingface' });
  }
  if (transcription.model !== undefined) {
    const models = STT_MODELS[transcription.provider];
    if (!models.includes(transcription.model)) {
      errors.push({ field: 'transcription.model', message: `must be one of: ${models.join(', ')} (for provider ${transcription.provider})` });
    }
  }
  const seen = new Set<string>();
  config.analysisConfig.customFields.forEach((f, i) => {
    if (seen.has(f.name)) errors.push({ field: `analysisConfig.customFields.${i}.name`, message: 'must be unique among custom fields' });
    seen.add(f.name);
    if (f.type === 'enum' && (!f.options || f.options.length === 0)) {
      errors.push({ field: `analysisConfig.customFields.${i}.options`, message: 'is required with at least one value for type enum' });
    }
    if (f.type === 'string' && f.options !== undefined) {
      errors.push({ field: `analysisConfig.customFields.${i}.options`, message: 'is only accepted for type enum' });
    }
  });
  return errors;
}

/** Merges a PATCH into a configuration: objects merge deeply, arrays and scalars replace, `null` deletes. */
export function deepMerge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    if (value === null) {
      delete out[key];
    } else if (isPlainObject(value) && isPlainObject(out[key])) {
      out[key] = deepMerge(out[key] as Record<string, unknown>, value);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Dotted paths of the leaves that differ between two configurations (arrays compare whole). */
export function changedPaths(before: unknown, after: unknown, prefix = ''): string[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].sort().flatMap((k) => changedPaths(before[k], after[k], prefix ? `${prefix}.${k}` : k));
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [prefix];
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
