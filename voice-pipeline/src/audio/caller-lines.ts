/**
 * Caller lines that have a committed μ-law fixture in `voice-pipeline/fixtures/speech/`
 * (rendered by `scripts/make-speech-fixtures.ts`), so simulated callers that stick to them
 * sound the same on machines without espeak-ng. Adding a line here needs a re-run of the
 * script and a commit of the new file.
 */
export const FIXTURE_CALLER_LINES: readonly string[] = [
  'Hi, I would like to book a table for two tonight.',
  "Seven o'clock works for me.",
  'What are your opening hours?',
  'Actually, can you tell me where you are located?',
  'mm-hmm',
  "Thanks, that's all. Goodbye.",
  'Can you repeat that please?',
  'Yes please.',
  'Hello?',
  'I need to change my booking.',
];
