import { applyCardEdit, formatCardNumber, formatDollars, formatFee } from './format';

describe('checkout formatting', () => {
  it('writes prices as dollars and the whole-dollar fee as the spec does', () => {
    expect(formatDollars(100)).toBe('$1.00');
    expect(formatDollars(0)).toBe('$0.00');
    expect(formatDollars(2000)).toBe('$20.00');
    expect(formatFee(100)).toBe('$1');
    expect(formatFee(150)).toBe('$1.50');
  });

  it('groups card digits by four and drops everything else', () => {
    expect(formatCardNumber('4242424242424242')).toBe('4242 4242 4242 4242');
    expect(formatCardNumber('4242-42a42 4')).toBe('4242 4242 4');
    expect(formatCardNumber('4242')).toBe('4242');
    expect(formatCardNumber('1234567890123456789012')).toBe('1234 5678 9012 3456 789');
  });

  it('keeps the caret where the person is typing', () => {
    expect(applyCardEdit('4242', '42424', 5)).toEqual({ value: '4242 4', caret: 6 });
    expect(applyCardEdit('4242 4242', '42142 4242', 3)).toEqual({ value: '4214 2424 2', caret: 3 });
  });

  it('deletes the digit beyond a group space instead of the space alone', () => {
    expect(applyCardEdit('4242 4242', '42424242', 4, 'deleteContentBackward')).toEqual({ value: '4244 242', caret: 3 });
    expect(applyCardEdit('4242 4242', '42424242', 4, 'deleteContentForward')).toEqual({ value: '4242 242', caret: 4 });
  });
});
