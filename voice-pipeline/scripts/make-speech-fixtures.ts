/**
 * Renders FIXTURE_CALLER_LINES with espeak-ng into voice-pipeline/fixtures/speech/<slug>.ulaw
 * (raw G.711 μ-law, 8 kHz, mono, no header): the fallback callerSpeechMulaw() uses on machines
 * without espeak-ng. The clips go through the same path as live synthesis (espeak-ng WAV at
 * 22,050 Hz → our resampler → μ-law), so fixture and live clips match.
 *
 *   npx tsx voice-pipeline/scripts/make-speech-fixtures.ts
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { mulawEncode } from '../src/audio/g711.js';
import { synthesizeSpeechWithSource } from '../src/audio/synth.js';
import { CALLER_SAMPLE_RATE_HZ, SPEECH_FIXTURES_DIR, speechFixtureSlug } from '../src/audio/caller-speech.js';
import { FIXTURE_CALLER_LINES } from '../src/audio/caller-lines.js';

async function main(): Promise<void> {
  await mkdir(SPEECH_FIXTURES_DIR, { recursive: true });
  const written = new Set<string>();
  for (const line of FIXTURE_CALLER_LINES) {
    const { pcm, source } = await synthesizeSpeechWithSource(line, CALLER_SAMPLE_RATE_HZ);
    if (source !== 'espeak-ng') throw new Error('espeak-ng is not installed; fixtures must be real speech');
    const name = `${speechFixtureSlug(line)}.ulaw`;
    await writeFile(new URL(name, SPEECH_FIXTURES_DIR), mulawEncode(pcm));
    written.add(name);
    console.log(`${name}\t${Math.round(pcm.length / (CALLER_SAMPLE_RATE_HZ / 1000))} ms\t${JSON.stringify(line)}`);
  }
  const stale = (await readdir(SPEECH_FIXTURES_DIR)).filter((f) => f.endsWith('.ulaw') && !written.has(f));
  if (stale.length > 0) console.warn(`not in FIXTURE_CALLER_LINES (delete if unused): ${stale.join(', ')}`);
  console.log(`wrote ${written.size} clips to ${fileURLToPath(SPEECH_FIXTURES_DIR)}`);
}

await main();
