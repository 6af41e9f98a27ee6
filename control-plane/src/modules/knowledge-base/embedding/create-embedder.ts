/** Picks the knowledge base's embedder from configuration (KB_EMBEDDING_*). */
import type { Embedder } from '../types.js';
import { LOCAL_EMBEDDING_MODEL, LocalEmbedder } from './local-embedder.js';
import { OpenAiCompatibleEmbedder, type OpenAiCompatibleEmbedderOptions } from './openai-compatible-embedder.js';

/** `ControlPlaneConfig['knowledgeBase']['embedding']`. */
export interface EmbeddingConfig {
  baseUrl: string | undefined;
  apiKey: string | undefined;
  model: string | undefined;
}

/**
 * The OpenAI-compatible embedder when a base URL is configured, else the local embedder.
 * Without a base URL the only model is the local one: naming another is a configuration
 * mistake (its vectors would be labelled with a model that did not make them), so it throws.
 * `overrides` tune the remote client (batch size, retries, prefixes).
 */
export function createEmbedder(config: EmbeddingConfig, overrides: Partial<Omit<OpenAiCompatibleEmbedderOptions, 'baseUrl' | 'apiKey' | 'model'>> = {}): Embedder {
  if (config.baseUrl === undefined) {
    if (config.model !== undefined && config.model !== LOCAL_EMBEDDING_MODEL) {
      throw new Error(`KB_EMBEDDING_MODEL=${config.model} needs KB_EMBEDDING_BASE_URL; without it the only model is ${LOCAL_EMBEDDING_MODEL}`);
    }
    return new LocalEmbedder();
  }
  if (config.model === undefined) throw new Error('KB_EMBEDDING_MODEL is required with KB_EMBEDDING_BASE_URL');
  return new OpenAiCompatibleEmbedder({ ...overrides, baseUrl: config.baseUrl, apiKey: config.apiKey, model: config.model });
}
