import { formatChatDate } from './format';

describe('formatChatDate', () => {
  const now = new Date(2030, 0, 8, 15, 30);

  it('says Today or Yesterday with the time, else the date', () => {
    expect(formatChatDate(new Date(2030, 0, 8, 9, 5).toISOString(), now)).toBe('Today, 9:05 AM');
    expect(formatChatDate(new Date(2030, 0, 7, 21, 0).toISOString(), now)).toBe('Yesterday, 9:00 PM');
    expect(formatChatDate(new Date(2030, 0, 2, 12, 0).toISOString(), now)).toBe('Jan 2');
    expect(formatChatDate(new Date(2029, 11, 24, 12, 0).toISOString(), now)).toBe('Dec 24, 2029');
  });

  it('gives nothing for a date it cannot read', () => {
    expect(formatChatDate('', now)).toBe('');
    expect(formatChatDate('soon', now)).toBe('');
  });
});
