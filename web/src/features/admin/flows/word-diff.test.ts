import { afterText, beforeText, wordDiff } from './word-diff';

describe('wordDiff', () => {
  it('marks the words taken out and put in, and keeps the rest', () => {
    expect(wordDiff('Hi, I am Emma. How can I help?', 'Hi, I am Emma. What can I fix?')).toEqual([
      { text: 'Hi, I am Emma. ', change: 'same' },
      { text: 'How', change: 'removed' },
      { text: 'What', change: 'added' },
      { text: ' can I ', change: 'same' },
      { text: 'help?', change: 'removed' },
      { text: 'fix?', change: 'added' },
    ]);
  });

  it('takes neighbouring changed words as one change', () => {
    expect(wordDiff('a quick brown fox', 'a slow red fox')).toEqual([
      { text: 'a ', change: 'same' },
      { text: 'quick brown', change: 'removed' },
      { text: 'slow red', change: 'added' },
      { text: ' fox', change: 'same' },
    ]);
  });

  it('tells words added at the end, and taken from the start', () => {
    expect(wordDiff('Start now.', 'Start now. It is free.')).toEqual([
      { text: 'Start now.', change: 'same' },
      { text: ' It is free.', change: 'added' },
    ]);
    expect(wordDiff('Hello there friend', 'there friend')).toEqual([
      { text: 'Hello ', change: 'removed' },
      { text: 'there friend', change: 'same' },
    ]);
  });

  it('gives each side back whole', () => {
    const before = 'We can walk you through {product}, step by step.\nStart now.';
    const after = 'Our experts walk you through {product} step by step.\n\nStart today.';
    const parts = wordDiff(before, after);
    expect(beforeText(parts)).toBe(before);
    expect(afterText(parts)).toBe(after);
  });

  it('says nothing changed for the same text, and all is new from nothing', () => {
    expect(wordDiff('same', 'same')).toEqual([{ text: 'same', change: 'same' }]);
    expect(wordDiff('', '')).toEqual([]);
    expect(wordDiff('', 'new text')).toEqual([{ text: 'new text', change: 'added' }]);
    expect(wordDiff('1500', '2000')).toEqual([
      { text: '1500', change: 'removed' },
      { text: '2000', change: 'added' },
    ]);
  });

  it('compares very long texts whole rather than word by word', () => {
    const before = Array.from({ length: 2000 }, (_, index) => `w${index}`).join(' ');
    const after = `${before} end`;
    const parts = wordDiff(before, after);
    expect(beforeText(parts)).toBe(before);
    expect(afterText(parts)).toBe(after);
  });
});
