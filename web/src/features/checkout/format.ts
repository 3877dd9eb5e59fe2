/** The longest card numbers have 19 digits. */
const MAX_CARD_DIGITS = 19;

/** `$20.00` for 2000 cents. */
export function formatDollars(cents: number): string {
  return `$${(cents / 100).toFixed(2)}`;
}

/** `$1` for whole dollars, as the spec writes the setup fee; `$1.50` otherwise. */
export function formatFee(cents: number): string {
  return cents % 100 === 0 ? `$${cents / 100}` : formatDollars(cents);
}

export function cardDigits(value: string): string {
  return value.replace(/\D/g, '').slice(0, MAX_CARD_DIGITS);
}

/** `4242 4242 4242 4242`: digits only, in groups of four, as printed on a card. */
export function formatCardNumber(value: string): string {
  return cardDigits(value).replace(/(\d{4})(?=\d)/g, '$1 ');
}

/** Where the caret belongs in `formatted` so that `digitsBefore` digits stay to its left. */
export function caretAfterDigits(formatted: string, digitsBefore: number): number {
  if (digitsBefore === 0) return 0;
  let seen = 0;
  for (let index = 0; index < formatted.length; index += 1) {
    if (/\d/.test(formatted[index]) && ++seen === digitsBefore) return index + 1;
  }
  return formatted.length;
}

export type CardEdit = { value: string; caret: number };

/**
 * Formats what the person typed and says where the caret goes. Deleting the space between two
 * groups would change nothing once the spaces are put back, so it deletes the digit beyond it.
 */
export function applyCardEdit(previous: string, typed: string, caret: number, inputType?: string): CardEdit {
  let digits = cardDigits(typed);
  let digitsBefore = cardDigits(typed.slice(0, caret)).length;
  const removedOnlyASpace = typed.length < previous.length && digits === cardDigits(previous);
  if (removedOnlyASpace && inputType === 'deleteContentBackward' && digitsBefore > 0) {
    digits = digits.slice(0, digitsBefore - 1) + digits.slice(digitsBefore);
    digitsBefore -= 1;
  } else if (removedOnlyASpace && inputType === 'deleteContentForward') {
    digits = digits.slice(0, digitsBefore) + digits.slice(digitsBefore + 1);
  }
  const value = formatCardNumber(digits);
  return { value, caret: caretAfterDigits(value, digitsBefore) };
}
