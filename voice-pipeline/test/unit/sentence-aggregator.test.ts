import { describe, expect, it } from 'vitest';
import { SentenceAggregator, splitSentences } from '../../src/processors/sentence-aggregator.js';
import { frames, Harness } from './harness.js';

const sentences = (h: Harness) => h.downOf('tts.sentence').map((f) => [f.turnId, f.text]);

describe('SentenceAggregator', () => {
  it('emits the first sentence as soon as it is complete, before the reply ends', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.turnStart('t1'));
    for (const piece of ['Sure', ',', ' I', ' can', ' help', ' with', ' that', '.']) h.down(frames.llmText('t1', piece));
    // A full stop alone may still be "3.5": the sentence is complete once whitespace follows.
    expect(sentences(h)).toEqual([]);
    h.down(frames.llmText('t1', ' What', 120));
    expect(sentences(h)).toEqual([['t1', 'Sure, I can help with that.']]);
    expect(h.downOf('tts.sentence')[0]!.at).toBe(120);
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence']);
  });

  it('holds short fragments such as "Dr." until the sentence is long enough', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('t1', 'Hi! '));
    expect(sentences(h)).toEqual([]);
    h.down(frames.llmText('t1', 'Dr. '), frames.llmText('t1', 'Smith can see you at 3.30 today. '));
    expect(sentences(h)).toEqual([['t1', 'Hi! Dr. Smith can see you at 3.30 today.']]);
  });

  it('cuts a long clause at a comma after the first piece', () => {
    const h = new Harness(new SentenceAggregator());
    const clause = 'We have availability on Monday morning, Tuesday afternoon and Wednesday after lunch,';
    expect(clause.length).toBeGreaterThanOrEqual(80);
    h.down(frames.llmText('t1', 'Let me check the calendar. '), frames.llmText('t1', `${clause} `), frames.llmText('t1', 'or Friday'));
    expect(sentences(h)).toEqual([
      ['t1', 'Let me check the calendar.'],
      ['t1', clause],
    ]);
    // A short clause is not cut.
    expect(splitSentences('Yes, of course, ').sentences).toEqual([]);
  });

  it('cuts the first piece of a reply at a comma once it is about five words long, later pieces only at sentences or long clauses', () => {
    const h = new Harness(new SentenceAggregator());
    const words = 'We are open every day from eleven in the morning until ten at night, except on Mondays when we open at five, and on holidays we keep Sunday hours. Lunch is served, too. '.split(/(?= )/);
    let cutAt = -1;
    words.forEach((w, i) => {
      h.down(frames.llmText('t1', w));
      if (cutAt < 0 && sentences(h).length > 0) cutAt = i;
    });
    // The first clause goes out when the word after its comma arrives, not at the full stop 14 words later.
    expect(words[cutAt]).toBe(' except');
    expect(sentences(h)).toEqual([
      ['t1', 'We are open every day from eleven in the morning until ten at night,'],
      ['t1', 'except on Mondays when we open at five, and on holidays we keep Sunday hours.'],
      ['t1', 'Lunch is served, too.'],
    ]);
    // A short opening clause is not cut; each turn has its own first piece.
    h.reset().down(frames.llmText('t2', 'Yes, of course, '), frames.llmText('t3', 'Certainly, the terrace is open, '));
    expect(sentences(h)).toEqual([['t3', 'Certainly, the terrace is open,']]);
    expect(splitSentences('Certainly, the terrace is open, ').sentences).toEqual([]);
    expect(splitSentences('Certainly, the terrace is open, ', { first: true }).sentences).toEqual(['Certainly, the terrace is open,']);
  });

  it('flushes the rest on llm.done, before passing llm.done on', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('t1', 'Your table is booked for seven. See you'), frames.llmText('t1', ' then'), frames.llmDone('t1', 300));
    expect(sentences(h)).toEqual([
      ['t1', 'Your table is booked for seven.'],
      ['t1', 'See you then'],
    ]);
    expect(h.kinds('down')).toEqual(['tts.sentence', 'tts.sentence', 'llm.done']);
    // Nothing buffered: llm.done alone passes through without an empty sentence.
    h.reset().down(frames.llmDone('t2'));
    expect(h.kinds('down')).toEqual(['llm.done']);
  });

  it('keeps the text of concurrent turns apart', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('a', 'First turn text'), frames.llmText('b', 'Second turn text'), frames.llmDone('a'), frames.llmDone('b'));
    expect(sentences(h)).toEqual([
      ['a', 'First turn text'],
      ['b', 'Second turn text'],
    ]);
  });

  it('drops buffered text on interrupt and passes the interrupt on', () => {
    const h = new Harness(new SentenceAggregator());
    h.down(frames.llmText('t1', 'Our opening hours are nine'), frames.interrupt(500));
    expect(h.kinds('down')).toEqual(['interrupt']);
    // A late llm.done of the aborted turn speaks nothing of the dropped text.
    h.down(frames.llmDone('t1'));
    expect(sentences(h)).toEqual([]);
    expect(h.kinds('down')).toEqual(['interrupt', 'llm.done']);
  });

  it('passes up frames through untouched', () => {
    const h = new Harness(new SentenceAggregator());
    const spoken = frames.spoken('t1', 'Hello.');
    h.up(spoken);
    expect(h.out.up).toEqual([spoken]);
  });
});
