// A word diff of two texts: what stayed, what was taken out and what was put in, word by word.
// Texts are at most a few hundred words (600 characters), so the longest common subsequence of
// their words is quick to find; longer ones beyond LIMIT are told as taken out and put in whole.

export type DiffPart = { text: string; change: 'same' | 'removed' | 'added' };

/** Beyond this many cells (words before × words after), the texts are compared whole. */
const LIMIT = 400_000;

/** Words and the spaces between them, each a token of its own. */
function tokens(text: string): string[] {
  return text.match(/\s+|\S+/g) ?? [];
}

function push(parts: DiffPart[], text: string, change: DiffPart['change']) {
  if (text === '') return;
  const last = parts[parts.length - 1];
  if (last && last.change === change) last.text += text;
  else parts.push({ text, change });
}

/** The edit script between the token lists: same, removed and added tokens in order. */
function compare(before: string[], after: string[]): DiffPart[] {
  const rows = before.length;
  const columns = after.length;
  // lengths[i][j]: the longest common subsequence of before[i..] and after[j..].
  const lengths = Array.from({ length: rows + 1 }, () => new Uint32Array(columns + 1));
  for (let i = rows - 1; i >= 0; i -= 1) {
    for (let j = columns - 1; j >= 0; j -= 1) {
      lengths[i][j] =
        before[i] === after[j] ? lengths[i + 1][j + 1] + 1 : Math.max(lengths[i + 1][j], lengths[i][j + 1]);
    }
  }
  const parts: DiffPart[] = [];
  let i = 0;
  let j = 0;
  while (i < rows && j < columns) {
    if (before[i] === after[j]) {
      parts.push({ text: before[i], change: 'same' });
      i += 1;
      j += 1;
    } else if (lengths[i + 1][j] >= lengths[i][j + 1]) {
      parts.push({ text: before[i], change: 'removed' });
      i += 1;
    } else {
      parts.push({ text: after[j], change: 'added' });
      j += 1;
    }
  }
  for (; i < rows; i += 1) parts.push({ text: before[i], change: 'removed' });
  for (; j < columns; j += 1) parts.push({ text: after[j], change: 'added' });
  return parts;
}

/**
 * The parts of `before` and `after`, in order: a run of changes comes as what was taken out, then
 * what was put in ("the [-old-][+new+] words"); a space alone between two changes belongs to the
 * change, so "a b" to "c d" is one change, not two.
 */
export function wordDiff(before: string, after: string): DiffPart[] {
  if (before === after) return before === '' ? [] : [{ text: before, change: 'same' }];
  const from = tokens(before);
  const to = tokens(after);
  const raw =
    from.length * to.length > LIMIT
      ? [
          { text: before, change: 'removed' as const },
          { text: after, change: 'added' as const },
        ]
      : compare(from, to);

  const parts: DiffPart[] = [];
  let removed = '';
  let added = '';
  const flush = () => {
    push(parts, removed, 'removed');
    push(parts, added, 'added');
    removed = '';
    added = '';
  };
  raw.forEach((part, index) => {
    if (part.change === 'removed') removed += part.text;
    else if (part.change === 'added') added += part.text;
    else {
      const inChange = removed !== '' || added !== '';
      const next = raw[index + 1];
      if (inChange && /^\s+$/.test(part.text) && next && next.change !== 'same') {
        removed += part.text;
        added += part.text;
        return;
      }
      flush();
      push(parts, part.text, 'same');
    }
  });
  flush();
  return parts;
}

/** The text before the change, from its parts. */
export function beforeText(parts: DiffPart[]): string {
  return parts
    .filter((part) => part.change !== 'added')
    .map((part) => part.text)
    .join('');
}

/** The text after the change, from its parts. */
export function afterText(parts: DiffPart[]): string {
  return parts
    .filter((part) => part.change !== 'removed')
    .map((part) => part.text)
    .join('');
}
