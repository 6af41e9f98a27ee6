/**
 * The booking the whole-platform call tests play: the caller's lines (each has a committed
 * speech fixture) and the scripted LLM replies. The hours reply is long on purpose: the
 * `where` line cuts it off (a barge-in).
 */
export const LINES = {
  book: 'Hi, I would like to book a table for two tonight.',
  hours: 'What are your opening hours?',
  where: 'Actually, can you tell me where you are located?',
  bye: "Thanks, that's all. Goodbye.",
};

export const REPLIES = {
  book: 'Of course. What time would you like to come?',
  hours:
    'We are open every day from eleven in the morning until ten at night, except on Mondays when we open at five in the afternoon, and on public holidays we keep the same hours as on Sundays, which means lunch and dinner are both served.',
  where: 'We are at twelve Harbour Street, next to the ferry terminal.',
  digit: 'You pressed five. I have noted that down.',
  bye: 'Thank you for calling. Goodbye!',
};
