import { describe, expect, it, vi } from 'vitest';
import type { TurnDetectorOptions } from '../../src/processors/turn-detector.js';
import { meaningfulWords, NEW_SPEECH_AFTER_MS, RESUME_AFTER_MS, stopAfterVoicedMs, TurnDetector } from '../../src/processors/turn-detector.js';
import { frames, Harness, levelVad } from './harness.js';

/** Time here is the frames' `at` (the session clock): the detector itself keeps no timers. */
function setup(over: Partial<TurnDetectorOptions> = {}) {
  const finalizeStt = vi.fn();
  const detector = new TurnDetector({ silenceDurationMs: 500, utteranceEndMs: 1000, interruptionEnabled: true, sensitivity: 'medium', finalizeStt, vad: levelVad(), ...over });
  const h = new Harness(detector);
  /** What `VoiceSession.transportPaused` does: the transport's pause, with its reaction, handed to the detector. */
  const transportPause = (at: number, reactionMs: number) => detector.takeTransportPause({ kind: 'agent.pause', at, speechOnsetAt: at - reactionMs });
  /** Feeds 20 ms frames covering [from, from + ms); returns the next frame's time. */
  const feed = (from: number, ms: number, voiced: boolean): number => {
    for (let t = from; t < from + ms; t += 20) h.down(frames.audio(t, voiced));
    return from + ms;
  };
  return { h, feed, finalizeStt, transportPause };
}

describe('TurnDetector: endpointing', () => {
  it('confirms speech onset after 60 ms of voiced audio, not after a 40 ms click', () => {
    const { h, feed } = setup();
    feed(0, 40, true);
    feed(40, 100, false);
    expect(h.downOf('user.started-speaking')).toEqual([]);
    feed(140, 40, true);
    expect(h.downOf('user.started-speaking')).toEqual([]);
    feed(180, 20, true);
    expect(h.downOf('user.started-speaking')).toEqual([{ kind: 'user.started-speaking', at: 180 }]);
    // Caller audio ends at the detector (the STT above it has streamed it); only what it decided goes on.
    expect(h.downOf('audio.in')).toHaveLength(0);
  });

  it('ends the turn after silenceDurationMs of silence once a final transcript arrived', () => {
    const { h, feed } = setup();
    feed(0, 600, true);
    feed(600, 40, false);
    expect(h.downOf('user.stopped-speaking')).toEqual([{ kind: 'user.stopped-speaking', at: 620 }]);
    const words = [
      { word: 'I', startMs: 40, endMs: 100, confidence: 0.9 },
      { word: 'need', startMs: 100, endMs: 300, confidence: 0.8 },
      { word: 'an', startMs: 300, endMs: 380, confidence: 1 },
      { word: 'appointment', startMs: 380, endMs: 580, confidence: 0.95 },
    ];
    h.down(frames.final('I need an appointment.', 650, { words, confidence: 0.9 }));
    feed(640, 460, false); // last frame at 1080: 480 ms quiet
    expect(h.downOf('user.turn')).toEqual([]);
    feed(1100, 20, false);
    const turns = h.downOf('user.turn');
    expect(turns).toHaveLength(1);
    expect(turns[0]).toEqual({
      kind: 'user.turn',
      at: 1100,
      turn: { text: 'I need an appointment.', source: 'speech', words, confidence: 0.9, startAt: 40, endAt: 580, speechEndAt: 600, sttFinalAt: 650 },
    });
    // One turn only, however long the silence lasts.
    feed(1120, 2000, false);
    expect(h.downOf('user.turn')).toHaveLength(1);
  });

  it('ends the turn sooner when the STT endpointer marks speechFinal', () => {
    const { h, feed } = setup();
    feed(0, 600, true);
    feed(600, 40, false);
    h.down(frames.final('What are your opening hours?', 660, { speechFinal: true }));
    expect(h.downOf('user.turn').map((f) => [f.at, f.turn.text])).toEqual([[660, 'What are your opening hours?']]);
  });

  it('ends the turn on the STT utterance-end while the line is quiet', () => {
    const { h, feed } = setup();
    feed(0, 600, true);
    h.down(frames.final('Can I come at ten?', 590));
    feed(600, 100, false);
    h.down(frames.utteranceEnd(700));
    expect(h.downOf('user.turn').map((f) => [f.at, f.turn.text])).toEqual([[700, 'Can I come at ten?']]);
  });

  it('waits for the local silence before a speechFinal that arrives while the caller still speaks', () => {
    const { h, feed } = setup();
    feed(0, 400, true);
    h.down(frames.final('Hello there.', 400, { speechFinal: true }));
    feed(400, 200, true);
    expect(h.downOf('user.turn')).toEqual([]);
    feed(600, 60, false);
    expect(h.downOf('user.turn').map((f) => [f.at, f.turn.text])).toEqual([[640, 'Hello there.']]);
  });

  it('asks the STT to finalise when only interim text is in, and waits for the final', () => {
    const { h, feed, finalizeStt } = setup();
    feed(0, 300, true);
    h.down(frames.interim('book a table for', 300));
    feed(300, 300, true);
    feed(600, 500, false); // last frame at 1080: 480 ms quiet
    expect(finalizeStt).not.toHaveBeenCalled();
    feed(1100, 20, false);
    expect(finalizeStt).toHaveBeenCalledTimes(1);
    feed(1120, 300, false);
    expect(finalizeStt).toHaveBeenCalledTimes(1);
    expect(h.downOf('user.turn')).toEqual([]);
    h.down(frames.final('Book a table for two.', 1420));
    expect(h.downOf('user.turn').map((f) => [f.at, f.turn.text])).toEqual([[1420, 'Book a table for two.']]);
  });

  it('tells the STT an utterance is open from the speech onset until the turn is taken, or the speech dropped', () => {
    const utteranceOpen = vi.fn();
    const { h, feed } = setup({ utteranceOpen });
    feed(0, 40, true);
    expect(utteranceOpen).not.toHaveBeenCalled();
    feed(40, 40, true);
    expect(utteranceOpen.mock.calls).toEqual([[true]]);
    feed(80, 400, true);
    h.down(frames.final('Hello there.', 500));
    feed(480, 500, false);
    expect(utteranceOpen.mock.calls).toEqual([[true]]);
    feed(980, 20, false);
    expect(h.downOf('user.turn')).toHaveLength(1);
    expect(utteranceOpen.mock.calls).toEqual([[true], [false]]);
    // Noise without any transcript: open at its onset, closed when it is given up.
    feed(1000, 100, true);
    expect(utteranceOpen.mock.calls).toEqual([[true], [false], [true]]);
    feed(1100, 1600, false);
    expect(h.downOf('user.turn')).toHaveLength(1);
    expect(utteranceOpen.mock.calls).toEqual([[true], [false], [true], [false]]);
  });

  it('produces no turn for noise without any transcript', () => {
    const { h, feed, finalizeStt } = setup();
    feed(0, 300, true);
    feed(300, 3000, false);
    expect(h.downOf('user.started-speaking')).toHaveLength(1);
    expect(h.downOf('user.stopped-speaking')).toHaveLength(1);
    expect(h.downOf('user.turn')).toEqual([]);
    expect(finalizeStt).not.toHaveBeenCalled();
    // The next utterance starts clean.
    feed(3300, 400, true);
    feed(3700, 40, false);
    h.down(frames.final('Hello?', 3760, { speechFinal: true }));
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['Hello?']);
  });
});

describe('TurnDetector: a late STT (or our own lag)', () => {
  // The wait is counted on the session clock: when the gateway falls behind, a final may
  // come after silenceDurationMs + utteranceEndMs (500 + 1000 here) although the STT was quick.

  it('answers the interim words, with their times and confidence, when no final came by the deadline, and drops the final that follows', () => {
    const { h, feed, finalizeStt } = setup();
    feed(0, 600, true);
    const words = [
      { word: 'book', startMs: 60, endMs: 260, confidence: 0.8 },
      { word: 'a', startMs: 260, endMs: 320, confidence: 0.7 },
      { word: 'table', startMs: 320, endMs: 560, confidence: 0.75 },
    ];
    h.down(frames.interim('book', 300, { words: words.slice(0, 1), confidence: 0.6 }));
    h.down(frames.interim('book a table', 500, { words, confidence: 0.76 }));
    feed(600, 1500, false); // last frame at 2080: 1480 ms quiet
    expect(finalizeStt).toHaveBeenCalledTimes(1);
    expect(h.downOf('user.turn')).toEqual([]);
    feed(2100, 20, false);
    // The latest interim's words: it replaced the one before.
    expect(h.downOf('user.turn')).toEqual([
      { kind: 'user.turn', at: 2100, turn: { text: 'book a table', source: 'speech', words, confidence: 0.76, startAt: 60, endAt: 560, speechEndAt: 600, sttFinalAt: 2100 } },
    ]);
    // The final for the same speech: already answered.
    h.down(frames.final('Book a table for two.', 2400, { speechFinal: true }));
    h.down(frames.utteranceEnd(2500));
    expect(h.downOf('user.turn')).toHaveLength(1);
    // Nor is it carried into the next turn.
    feed(3000, 400, true);
    feed(3400, 40, false);
    h.down(frames.final('At eight.', 3460, { speechFinal: true }));
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['book a table', 'At eight.']);
  });

  it(`still answers a late final whose words start ${NEW_SPEECH_AFTER_MS} ms or more after the answered speech: new speech the local VAD missed`, () => {
    const { h, feed } = setup();
    feed(0, 600, true);
    h.down(frames.interim('book a table', 500));
    feed(600, 1520, false);
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['book a table']);
    const word = (w: string, startMs: number) => ({ word: w, startMs, endMs: startMs + 200, confidence: 0.9 });
    // The answered speech's final (its words within 0-600 ms), and one starting just after its end: its tail.
    h.down(frames.final('Book a table', 2200, { startMs: 0, words: [word('Book', 100), word('a', 300), word('table', 400)] }));
    h.down(frames.final('please.', 2250, { startMs: 600, words: [word('please', 600 + NEW_SPEECH_AFTER_MS - 20)] }));
    expect(h.downOf('user.turn')).toHaveLength(1);
    // A soft "Hello?" at 2.3 s the VAD heard none of (the line stayed "quiet"): answered when its final comes.
    feed(2120, 500, false);
    h.down(frames.final('Hello?', 2900, { startMs: 2200, words: [word('Hello', 2300)] }));
    expect(h.downOf('user.turn').map((f) => [f.at, f.turn.text, f.turn.startAt])).toEqual([
      [2100, 'book a table', 0],
      [2900, 'Hello?', 2300],
    ]);
  });

  it('answers the finals and the interim words after them at the deadline, words and confidence of both', () => {
    const { h, feed } = setup();
    feed(0, 600, true);
    const hi = { word: 'Hi,', startMs: 40, endMs: 200, confidence: 0.8 };
    const book = { word: 'book', startMs: 400, endMs: 580, confidence: 0.5 };
    h.down(frames.final('Hi,', 400, { confidence: 0.8, words: [hi] }));
    h.down(frames.interim('I would like to book', 590, { confidence: 0.6, words: [book] }));
    feed(600, 1520, false);
    expect(h.downOf('user.turn').map((f) => [f.at, f.turn.text, f.turn.confidence, f.turn.words, f.turn.startAt, f.turn.endAt, f.turn.sttFinalAt])).toEqual([
      [2100, 'Hi, I would like to book', 0.7, [hi, book], 40, 580, 400],
    ]);
  });

  it('keeps no interim words in a turn the finals complete, nor one the STT sent after the turn ended', () => {
    const { h, feed } = setup();
    feed(0, 600, true);
    h.down(frames.interim('Table for', 300, { confidence: 0.3, words: [{ word: 'Table', startMs: 40, endMs: 200, confidence: 0.3 }] }));
    const words = [{ word: 'Table', startMs: 40, endMs: 200, confidence: 0.9 }];
    h.down(frames.final('Table for two.', 650, { confidence: 0.9, words }));
    feed(600, 520, false);
    expect(h.downOf('user.turn').map((f) => [f.turn.text, f.turn.confidence, f.turn.words])).toEqual([['Table for two.', 0.9, words]]);
    // Between utterances: an interim, then a final of new speech the VAD missed.
    h.down(frames.interim('at eight', 1300, { confidence: 0.2, words: [{ word: 'at', startMs: 900, endMs: 1000, confidence: 0.2 }] }));
    const late = [{ word: 'At', startMs: 900, endMs: 1000, confidence: 0.95 }];
    h.down(frames.final('At eight.', 1400, { confidence: 0.95, startMs: 880, words: late }));
    expect(h.downOf('user.turn').map((f) => [f.turn.text, f.turn.confidence, f.turn.words])).toEqual([
      ['Table for two.', 0.9, words],
      ['At eight.', 0.95, late],
    ]);
  });

  it('answers a final that comes after the deadline for speech the STT had sent nothing of', () => {
    const { h, feed, finalizeStt } = setup();
    feed(0, 600, true);
    feed(600, 2000, false);
    expect(h.downOf('user.turn')).toEqual([]);
    expect(finalizeStt).not.toHaveBeenCalled();
    // The caller is still quiet when the words arrive: they are the turn, at once.
    h.down(frames.final('What are your opening hours?', 2700, { speechFinal: true }));
    const turns = h.downOf('user.turn');
    expect(turns.map((f) => [f.at, f.turn.text, f.turn.speechEndAt, f.turn.sttFinalAt])).toEqual([[2700, 'What are your opening hours?', 600, 2700]]);
    // Once only.
    h.down(frames.final('Hours?', 2800));
    expect(h.downOf('user.turn')).toHaveLength(1);
  });

  it('does not answer a late final while the agent speaks, nor one for speech over the agent', () => {
    const { h, feed } = setup();
    feed(0, 300, true);
    feed(300, 1600, false); // dropped at the deadline: no transcript
    h.up(frames.audioStarted('turn_prompt', 2000));
    h.down(frames.final('Hello?', 2100));
    expect(h.downOf('user.turn')).toEqual([]);
    // Over the agent: a cough-length sound with no words, dropped; its late final is not a turn either.
    feed(3000, 80, true);
    feed(3080, 1600, false);
    h.up(frames.spoken('turn_prompt', 'Are you still there?', { at: 4700 }));
    h.down(frames.final('Mm.', 4800));
    expect(h.downOf('user.turn')).toEqual([]);
    expect(h.downOf('interrupt')).toEqual([]);
  });

  it('lets neither an utterance-end nor an interim between utterances cut or fill the next turn', () => {
    const { h, feed } = setup();
    feed(0, 400, true);
    feed(400, 40, false);
    h.down(frames.final('Hello.', 460, { speechFinal: true }));
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['Hello.']);
    // Deepgram's UtteranceEnd comes after the final, and a stray interim.
    h.down(frames.utteranceEnd(1500));
    h.down(frames.interim('hello', 1600));
    // Next utterance: a final without speechFinal, then a short pause between sentences.
    feed(2000, 600, true);
    h.down(frames.final('I want to book', 2590));
    feed(2600, 100, false);
    expect(h.downOf('user.turn')).toHaveLength(1);
    feed(2700, 400, true);
    feed(3100, 500, false);
    h.down(frames.final('a table for two.', 3300));
    feed(3600, 20, false);
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['Hello.', 'I want to book a table for two.']);
    // Noise with no transcript after a stray interim: no turn made of the stale words.
    h.down(frames.interim('two', 4000));
    feed(5000, 300, true);
    feed(5300, 2000, false);
    expect(h.downOf('user.turn')).toHaveLength(2);
  });
});

describe('TurnDetector: barge-in', () => {
  it('interrupts at medium on the first meaningful word once 100 ms of speech were heard over the audible agent', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    expect(h.upOf('agent.audio-started')).toHaveLength(1);
    feed(1000, 60, true);
    h.down(frames.interim('wait', 1060));
    // A word, but only 60 ms of voice so far: not yet.
    expect(h.downOf('interrupt')).toEqual([]);
    feed(1060, 60, true);
    expect(h.downOf('interrupt')).toEqual([{ kind: 'interrupt', cause: 'barge-in', at: 1080, speechOnsetAt: 1000 }]);
    feed(1120, 180, true);
    // What the caller says after barging in is an ordinary turn.
    feed(1300, 40, false);
    h.down(frames.final('Wait, stop.', 1360, { speechFinal: true }));
    expect(h.downOf('interrupt')).toHaveLength(1);
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['Wait, stop.']);
  });

  it('interrupts at medium on a word that arrives in a short pause between words, counting the voice before the pause', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    // "What | are your…": 140 ms of voice, a 40 ms pause (speech stopped), then more voice.
    feed(1000, 140, true);
    feed(1140, 40, false);
    expect(h.downOf('user.stopped-speaking')).toHaveLength(1);
    h.down(frames.interim('what', 1180));
    expect(h.downOf('interrupt')).toEqual([{ kind: 'interrupt', cause: 'barge-in', at: 1180, speechOnsetAt: 1000 }]);
  });

  it('does not interrupt at medium on a long run of voice whose words are all backchannels', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 300, true);
    h.down(frames.interim('yeah okay', 1300));
    feed(1300, 400, true);
    h.down(frames.interim('yeah okay mm-hmm', 1700));
    expect(h.downOf('interrupt')).toEqual([]);
    // The first real word does it.
    h.down(frames.interim('yeah okay mm-hmm but', 1720));
    expect(h.downOf('interrupt').map((f) => f.at)).toEqual([1720]);
  });

  it('does not interrupt at medium for a 160 ms cough, however loud', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 160, true);
    feed(1160, 2000, false);
    expect(h.downOf('interrupt')).toEqual([]);
    expect(h.downOf('user.turn')).toEqual([]);
  });

  it('does not interrupt for a 140 ms cough', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 140, true);
    feed(1140, 2000, false);
    expect(h.downOf('user.started-speaking')).toHaveLength(1);
    expect(h.downOf('interrupt')).toEqual([]);
    expect(h.downOf('user.turn')).toEqual([]);
  });

  it('neither interrupts nor starts a turn for a backchannel over the agent', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 200, true);
    h.down(frames.interim('mm-hmm', 1200));
    feed(1200, 100, true);
    feed(1300, 40, false);
    h.down(frames.final('Mm-hmm.', 1350, { speechFinal: true }));
    feed(1340, 2000, false);
    expect(h.downOf('interrupt')).toEqual([]);
    expect(h.downOf('user.turn')).toEqual([]);
  });

  it('interrupts at high on 120 ms of voice without any words', () => {
    const { h, feed } = setup({ sensitivity: 'high' });
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 100, true);
    expect(h.downOf('interrupt')).toEqual([]);
    feed(1100, 100, true);
    expect(h.downOf('interrupt')).toEqual([{ kind: 'interrupt', cause: 'barge-in', at: 1100, speechOnsetAt: 1000 }]);
  });

  it('interrupts at medium on 900 ms of voice even before any word is transcribed', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 880, true);
    expect(h.downOf('interrupt')).toEqual([]);
    feed(1880, 20, true);
    expect(h.downOf('interrupt').map((f) => f.at)).toEqual([1880]);
  });

  it('never interrupts when interruption is disabled', () => {
    const { h, feed } = setup({ interruptionEnabled: false, sensitivity: 'high' });
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 300, true);
    h.down(frames.interim('wait stop please', 1300));
    feed(1300, 1500, true);
    h.down(frames.final('Wait, stop please.', 2800));
    expect(h.downOf('interrupt')).toEqual([]);
  });

  it('treats speech after the agent finished (agent.spoken) as a normal turn', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 100), frames.spoken('turn_a', 'Shall I book it?', { at: 900 }));
    expect(h.upOf('agent.spoken')).toHaveLength(1);
    feed(1000, 300, true);
    h.down(frames.interim('yeah', 1200));
    feed(1300, 40, false);
    h.down(frames.final('Yeah.', 1350, { speechFinal: true }));
    expect(h.downOf('interrupt')).toEqual([]);
    expect(h.downOf('user.turn').map((f) => f.turn.text)).toEqual(['Yeah.']);
  });

  it('stays interruptible while a queued second agent turn plays after the first finished', () => {
    const { h, feed } = setup();
    // Disclosure then first message: the second turn's audio is handed to the carrier
    // before the first one's end mark comes back.
    h.up(frames.audioStarted('turn_disclosure', 0), frames.audioStarted('turn_first', 2000), frames.spoken('turn_disclosure', 'This call is recorded.', { at: 2100 }));
    feed(3000, 100, true);
    h.down(frames.interim('sorry who is this', 3100));
    feed(3100, 200, true);
    expect(h.downOf('interrupt').map((f) => f.cause)).toEqual(['barge-in']);
  });

  it('is not audible any more after an interrupt from above', () => {
    const { h, feed } = setup({ sensitivity: 'high' });
    h.up(frames.audioStarted('turn_a', 0));
    h.down(frames.interrupt(500, 'ending'));
    expect(h.downOf('interrupt').map((f) => f.cause)).toEqual(['ending']);
    feed(1000, 300, true);
    expect(h.downOf('interrupt')).toHaveLength(1);
  });
});

describe('TurnDetector: pause, then confirm or resume', () => {
  it('pauses the agent at medium after 100 ms of voice, and the first meaningful word confirms the barge-in', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 80, true);
    expect(h.downOf('agent.pause')).toEqual([]);
    feed(1080, 20, true);
    expect(h.downOf('agent.pause')).toEqual([{ kind: 'agent.pause', at: 1080, speechOnsetAt: 1000 }]);
    expect(h.downOf('interrupt')).toEqual([]);
    feed(1100, 160, true);
    h.down(frames.interim('wait', 1260));
    expect(h.downOf('interrupt')).toEqual([{ kind: 'interrupt', cause: 'barge-in', at: 1260, speechOnsetAt: 1000 }]);
    // Confirmed: nothing resumes, however long the silence.
    feed(1260, 40, false);
    feed(1300, 2000, false);
    expect(h.downOf('agent.resume')).toEqual([]);
    expect(h.downOf('agent.pause')).toHaveLength(1);
  });

  it(`resumes after a cough once the caller has been quiet for RESUME_AFTER_MS (${RESUME_AFTER_MS} ms), with no interrupt and no turn`, () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 160, true); // the cough: last voiced frame ends at 1160
    expect(h.downOf('agent.pause').map((f) => f.at)).toEqual([1080]);
    feed(1160, RESUME_AFTER_MS - 40, false);
    expect(h.downOf('agent.resume')).toEqual([]);
    feed(1160 + RESUME_AFTER_MS - 40, 2000, false);
    expect(h.downOf('agent.resume')).toEqual([{ kind: 'agent.resume', at: 1160 + RESUME_AFTER_MS - 20, speechOnsetAt: 1000 }]);
    expect(h.downOf('interrupt')).toEqual([]);
    expect(h.downOf('user.turn')).toEqual([]);
  });

  it('resumes after a backchannel over the agent and makes no turn of it', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 200, true);
    h.down(frames.interim('mm-hmm', 1200));
    feed(1200, 100, true);
    feed(1300, 40, false);
    h.down(frames.final('Mm-hmm.', 1350, { speechFinal: true }));
    feed(1340, 2000, false);
    expect(h.downOf('agent.pause')).toHaveLength(1);
    expect(h.downOf('agent.resume').map((f) => f.at)).toEqual([1300 + RESUME_AFTER_MS - 20]);
    expect(h.downOf('interrupt')).toEqual([]);
    expect(h.downOf('user.turn')).toEqual([]);
  });

  it('stays paused while the caller keeps talking, and a word arriving in the window still confirms', () => {
    const { h, feed } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 200, true);
    feed(1200, 200, false); // a pause shorter than the window
    feed(1400, 200, true);
    feed(1600, 300, false);
    expect(h.downOf('agent.resume')).toEqual([]);
    h.down(frames.interim('hello', 1900));
    expect(h.downOf('interrupt').map((f) => f.at)).toEqual([1900]);
    feed(1900, 2000, false);
    expect(h.downOf('agent.resume')).toEqual([]);
  });

  it('does not pause for less than 100 ms of voice, at high (which interrupts at once) or when interruption is disabled', () => {
    const short = setup();
    short.h.up(frames.audioStarted('turn_a', 900));
    short.feed(1000, 80, true);
    short.feed(1080, 1000, false);
    expect(short.h.downOf('agent.pause')).toEqual([]);
    const high = setup({ sensitivity: 'high' });
    high.h.up(frames.audioStarted('turn_a', 900));
    high.feed(1000, 300, true);
    expect(high.h.downOf('agent.pause')).toEqual([]);
    expect(high.h.downOf('interrupt')).toHaveLength(1);
    const off = setup({ interruptionEnabled: false });
    off.h.up(frames.audioStarted('turn_a', 900));
    off.feed(1000, 300, true);
    off.feed(1300, 1000, false);
    expect(off.h.downOf('agent.pause')).toEqual([]);
    expect(off.h.downOf('agent.resume')).toEqual([]);
  });

  it('pauses at low too, and an interrupt from above (call ending) ends the pause without a resume', () => {
    const { h, feed } = setup({ sensitivity: 'low' });
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 120, true);
    expect(h.downOf('agent.pause').map((f) => f.at)).toEqual([1080]);
    h.down(frames.interrupt(1200, 'ending'));
    feed(1200, 1000, false);
    expect(h.downOf('agent.resume')).toEqual([]);
  });
});

describe('TurnDetector: a pause the transport made first', () => {
  it('stops the agent after 100 ms of voice at medium and low (the pause rule), 120 ms at high (the interrupt rule)', () => {
    expect([stopAfterVoicedMs('medium'), stopAfterVoicedMs('low'), stopAfterVoicedMs('high')]).toEqual([100, 100, 120]);
  });

  it('takes the pause over before reading the frame that would have paused it: one pause, with the transport\'s reaction, then confirmed by a word', () => {
    const { h, feed, transportPause } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 80, true);
    expect(transportPause(1080, 95)).toBe('taken');
    expect(h.downOf('agent.pause')).toEqual([{ kind: 'agent.pause', at: 1080, speechOnsetAt: 985 }]);
    feed(1080, 180, true);
    expect(h.downOf('agent.pause')).toHaveLength(1);
    h.down(frames.interim('wait', 1260));
    expect(h.downOf('interrupt')).toEqual([{ kind: 'interrupt', cause: 'barge-in', at: 1260, speechOnsetAt: 1000 }]);
    feed(1260, 2000, false);
    expect(h.downOf('agent.resume')).toEqual([]);
  });

  it('resumes a cough the transport paused, once the caller has been quiet for RESUME_AFTER_MS', () => {
    const { h, feed, transportPause } = setup();
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 80, true);
    expect(transportPause(1080, 90)).toBe('taken');
    feed(1080, 80, true); // the cough's last voiced frame ends at 1160
    feed(1160, 2000, false);
    expect(h.downOf('agent.pause')).toHaveLength(1);
    expect(h.downOf('agent.resume')).toEqual([{ kind: 'agent.resume', at: 1160 + RESUME_AFTER_MS - 20, speechOnsetAt: 1000 }]);
    expect(h.downOf('user.turn')).toEqual([]);
  });

  it('leaves it when it paused already, and says not-audible when no agent turn is audible (an interrupt was decided, or the turn made no audio)', () => {
    const first = setup();
    first.h.up(frames.audioStarted('turn_a', 900));
    first.feed(1000, 100, true);
    expect(first.transportPause(1100, 100)).toBe('paused');
    expect(first.h.downOf('agent.pause')).toEqual([{ kind: 'agent.pause', at: 1080, speechOnsetAt: 1000 }]);

    const cleared = setup();
    cleared.h.up(frames.audioStarted('turn_a', 900));
    cleared.feed(1000, 140, true);
    cleared.h.down(frames.interim('stop', 1140));
    expect(cleared.h.downOf('interrupt')).toHaveLength(1);
    expect(cleared.transportPause(1140, 140)).toBe('not-audible');
    expect(cleared.h.downOf('agent.pause')).toHaveLength(1); // the detector's own, before the interrupt
    cleared.feed(1140, 2000, false);
    expect(cleared.h.downOf('agent.resume')).toEqual([]);

    const silent = setup();
    silent.feed(1000, 200, true);
    expect(silent.transportPause(1200, 100)).toBe('not-audible');
    // A pause from above goes the same way.
    silent.h.down({ kind: 'agent.pause', at: 1200, speechOnsetAt: 1100 });
    silent.feed(1200, 2000, false);
    expect(silent.h.downOf('agent.pause')).toEqual([]);
    expect(silent.h.downOf('agent.resume')).toEqual([]);
  });

  it('at high, where the rule interrupts without pausing, the interrupt follows the transport\'s pause', () => {
    const { h, feed, transportPause } = setup({ sensitivity: 'high' });
    h.up(frames.audioStarted('turn_a', 900));
    feed(1000, 100, true);
    expect(transportPause(1100, 100)).toBe('taken');
    feed(1100, 20, true);
    expect(h.downOf('agent.pause').map((f) => f.at)).toEqual([1100]);
    expect(h.downOf('interrupt').map((f) => f.at)).toEqual([1100]);
  });
});

describe('meaningfulWords', () => {
  it('drops backchannels and punctuation', () => {
    expect(meaningfulWords('Mm-hmm. Yeah, okay!')).toEqual([]);
    expect(meaningfulWords("Wait, don't go")).toEqual(['wait', 'dont', 'go']);
  });
});
