import { formatTrialEnd } from './format';

describe('formatTrialEnd', () => {
  it('writes the date out in words', () => {
    // Midday, so every time zone agrees on the day.
    expect(formatTrialEnd('2030-01-08T12:00:00Z')).toBe('January 8, 2030');
  });

  it('gives up on text that is not a date', () => {
    expect(formatTrialEnd('soon')).toBeNull();
  });
});
