import { dropoffRows, formatDuration, readDropoff, writeDropoff } from './dropoff-model';
import type { DropoffFlow } from './flows-api';

const STEPS = ['joined', 'first_message', 'final_message', 'checkout', 'trial_paid', 'month_paid'];

describe('the drop-off', () => {
  it('tells a time in its largest unit: "4.3 s", "45 s", "2 min", "5 h", "3 d"', () => {
    expect(formatDuration(4_321)).toBe('4.3 s');
    expect(formatDuration(4_000)).toBe('4 s');
    expect(formatDuration(450)).toBe('0.5 s');
    expect(formatDuration(45_400)).toBe('45 s');
    expect(formatDuration(59_600)).toBe('1 min');
    expect(formatDuration(120_000)).toBe('2 min');
    expect(formatDuration(150_000)).toBe('2.5 min');
    expect(formatDuration(5 * 3_600_000)).toBe('5 h');
    expect(formatDuration(3 * 86_400_000)).toBe('3 d');
    expect(formatDuration(36 * 86_400_000)).toBe('36 d');
    expect(formatDuration(null)).toBe('–');
  });

  it('gives each step per version its count, its shares and its median', () => {
    const flow: DropoffFlow = {
      name: 'default',
      versions: [
        {
          version: 2,
          steps: [
            { step: 'joined', count: 200, medianMsToNext: 4_300 },
            { step: 'first_message', count: 150, medianMsToNext: 120_000 },
            { step: 'final_message', count: 100, medianMsToNext: 9_000 },
            { step: 'checkout', count: 40, medianMsToNext: 60_000, button: 30, automatic: 10 },
            { step: 'trial_paid', count: 10, medianMsToNext: 3 * 86_400_000 },
            { step: 'month_paid', count: 4, medianMsToNext: null },
          ],
        },
        { version: 1, steps: [{ step: 'joined', count: 10, medianMsToNext: null }] },
      ],
    };
    const rows = dropoffRows(flow, STEPS);
    expect(rows.map((row) => row.label)).toEqual([
      'Joined',
      'First message',
      'Final message',
      'Checkout opened',
      'Trial paid',
      'First month paid',
    ]);
    // Oldest version first.
    expect(rows[1].cells.map((cell) => cell.version)).toEqual([1, 2]);
    expect(rows[1].cells[1]).toEqual({
      version: 2,
      count: 150,
      ofJoined: '75.0%',
      ofBefore: '75.0%',
      median: '2 min',
      how: null,
    });
    expect(rows[0].cells[1]).toMatchObject({ ofJoined: '100.0%', ofBefore: '–', median: '4.3 s' });
    expect(rows[3].cells[1]).toMatchObject({ count: 40, ofJoined: '20.0%', ofBefore: '40.0%', how: 'button 30 / automatic 10' });
    expect(rows[4].cells[1].median).toBe('3 d');
    // A version without a step counts none.
    expect(rows[1].cells[0]).toMatchObject({ count: 0, ofJoined: '0.0%', ofBefore: '0.0%', median: '–' });
  });

  it('keeps its filters in the address, beside the flow edited', () => {
    const now = new Date('2026-11-30T12:00:00Z');
    const query = readDropoff(
      new URLSearchParams('edit=email&from=2026-11-01&to=2026-11-15&funnel=refundable&flow=email&campaign=2145&keyword=printer'),
      now,
    );
    expect(query).toEqual({
      from: '2026-11-01',
      to: '2026-11-15',
      funnel: 'refundable',
      flow: 'email',
      campaign: '2145',
      keyword: 'printer',
    });
    const written = writeDropoff(new URLSearchParams('edit=email&campaign=old'), { ...query, campaign: undefined });
    expect(written.toString()).toBe('edit=email&from=2026-11-01&to=2026-11-15&funnel=refundable&flow=email&keyword=printer');
    // Without a range, or with a wrong one: the last 30 days; an unknown funnel is none.
    expect(readDropoff(new URLSearchParams('from=2026-11-20&to=2026-11-01&funnel=help'), now)).toEqual({
      from: '2026-11-01',
      to: '2026-11-30',
      funnel: undefined,
      flow: undefined,
      campaign: undefined,
      keyword: undefined,
    });
  });
});
