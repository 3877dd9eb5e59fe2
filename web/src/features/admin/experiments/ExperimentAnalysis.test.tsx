import { fireEvent, render, screen, within } from '@testing-library/react';
import { ExperimentAnalysis, MIN_VISITORS_FOR_RANGE, TOO_FEW_FOR_RANGE } from './ExperimentAnalysis';
import type { Analysis, Experiment } from './experiments-api';
import { analysis, armFigures, experiment, plainText } from './test-fixtures';

function renderAnalysis(figures: Analysis = analysis(), exp: Experiment = experiment(), onPromote?: (arm: string) => void) {
  return render(<ExperimentAnalysis experiment={exp} analysis={figures} onPromote={onPromote} />);
}

function cells(key: string): string[] {
  const row = screen.getByTestId(`exp-arm-row-${key}`);
  return Array.from(row.querySelectorAll('th, td')).map((cell) => plainText(cell.textContent));
}

/** An arm's card (the phone's layout) as its definition list says it: each term and its value. */
function card(key: string): { title: string; figures: [string, string][] } {
  const element = screen.getByTestId(`exp-arm-card-${key}`);
  return {
    title: plainText(element.querySelector('h3')?.textContent),
    figures: Array.from(element.querySelectorAll('dl > div')).map((item) => [
      plainText(item.querySelector('dt')?.textContent),
      plainText(item.querySelector('dd')?.textContent),
    ]),
  };
}

function headers(): string[] {
  return screen.getAllByRole('columnheader').map((header) => plainText(header.textContent));
}

describe('ExperimentAnalysis', () => {
  it('shows the rule’s sentence and each arm’s figures, the goal’s metric first', () => {
    renderAnalysis();
    expect(screen.getByTestId('exp-status-sentence').textContent).toBe(
      'B wins: 97.3 % chance to beat A, expected loss 0.0004.',
    );
    const [arm, visitors, paid, rate, revenue, chance, loss, refunds, early] = cells('b');
    expect(arm).toBe('B · Short Wins');
    expect(visitors).toBe('1,180');
    expect(paid).toBe('52');
    expect(rate).toBe('4.4 %3.3 % – 5.7 %');
    expect(revenue).toBe('$0.76$0.55 – $0.97$720.00 in all');
    // The goal's (trial paid) chance and loss, then the revenue's, smaller.
    expect(chance).toBe('97.3 %+1.41 pp vs controlRevenue: 81.0 %');
    expect(loss).toBe('0.04 ppRevenue: $0.015 per visitor');
    expect(refunds).toBe('12.0 %Above the limit of 10.0 %6 of 50 fees');
    expect(early).toBe('30.0 %330 of 1,100 chats');

    const control = cells('a');
    expect(control[0]).toBe('A · Control');
    expect(control[5]).toBe('Control');
    // The control's loss: what keeping it costs if B is in fact better.
    expect(control[6]).toBe('1.41 ppRevenue: $0.15 per visitor');
    expect(control[7]).toBe('5.0 %2 of 40 fees');
  });

  it('marks a guardrail crossed, and lists the server’s words for it', () => {
    renderAnalysis();
    const row = screen.getByTestId('exp-arm-row-b');
    expect(row.querySelectorAll('[data-breach]')).toHaveLength(1);
    expect(screen.getByTestId('exp-arm-row-a').querySelector('[data-breach]')).toBeNull();
    expect(screen.getByTestId('exp-breaches').textContent).toContain(
      'Arm B (Short): Refund rate 12.0 % is above the limit of 10.0 %.',
    );
  });

  it('warns of a sample ratio mismatch only when the server says so', () => {
    const { unmount } = renderAnalysis();
    expect(screen.queryByTestId('exp-srm')).toBeNull();
    expect(screen.queryByText(/Sample ratio mismatch/)).toBeNull();
    unmount();

    renderAnalysis(
      analysis({ srm: { pValue: 0.0003, warning: true, expectedShares: [0.5, 0.5], observedShares: [0.521, 0.479] } }),
    );
    const warning = screen.getByTestId('exp-srm');
    expect(warning.getAttribute('role')).toBe('alert');
    expect(plainText(warning.textContent)).toBe(
      'Sample ratio mismatch: the arms got 52.1 % / 47.9 % of visitors where 50 % / 50 % was set (p = 0.0003). Check redirects and bots before trusting the result.',
    );
  });

  it('offers to promote the arm the rule picks, and no button when it picks none', () => {
    const onPromote = vi.fn<(arm: string) => void>();
    const { unmount } = renderAnalysis(analysis(), experiment(), onPromote);
    fireEvent.click(screen.getByRole('button', { name: 'Promote arm B (Short)' }));
    expect(onPromote).toHaveBeenCalledWith('b');
    unmount();

    renderAnalysis(
      analysis({
        promotable: null,
        decision: { state: 'collecting', exposuresNeeded: 412, daysNeeded: 3 },
        status: 'Collecting: 412 more exposures and 3 more days.',
      }),
      experiment(),
      onPromote,
    );
    expect(screen.queryByRole('button', { name: /Promote/ })).toBeNull();
    expect(screen.getByText('Collecting: 412 more exposures and 3 more days.')).toBeTruthy();
  });

  it('puts the table in a frame that scrolls sideways if need be, not the page', () => {
    renderAnalysis();
    const table = screen.getByRole('table');
    const scroller = table.parentElement as HTMLElement;
    expect(scroller.className).toBe('admin-table__scroll');
    expect(scroller.getAttribute('role')).toBe('region');
    expect(scroller.getAttribute('aria-label')).toBe('Figures by arm');
    expect(scroller.tabIndex).toBe(0);
    // The class experiments.css hides on a phone, where the cards are shown instead.
    expect(scroller.parentElement?.className).toBe('admin-table__frame exp-table-frame');
    expect(screen.getByTestId('exp-cards').className).toBe('exp-cards');
  });

  it('says “Chance to beat the control” in the table’s header', () => {
    renderAnalysis();
    expect(headers()).toEqual([
      'Arm',
      'Visitors',
      'Trial paid',
      'Trial-paid rate',
      'Net revenue per visitor',
      'Chance to beat the control',
      'Expected loss',
      'Refund rate',
      'Early-leave rate',
    ]);
  });

  it('shows each arm as a card for a phone: its name, then its figures in a definition list', () => {
    renderAnalysis();
    const list = screen.getByRole('list', { name: 'Figures by arm' });
    expect(Array.from(list.children).map((item) => item.getAttribute('data-testid'))).toEqual([
      'exp-arm-card-a',
      'exp-arm-card-b',
    ]);
    expect(card('b')).toEqual({
      title: 'B · Short Wins',
      figures: [
        ['Visitors', '1,180'],
        ['Trial paid', '52 (4.4 %)3.3 % – 5.7 %'],
        ['Chance to beat the control', '97.3 %+1.41 pp vs controlRevenue: 81.0 %'],
        ['Expected loss', '0.04 ppRevenue: $0.015 per visitor'],
        ['Refund rate', '12.0 %Above the limit of 10.0 %6 of 50 fees'],
        ['Early-leave rate', '30.0 %330 of 1,100 chats'],
        ['Guardrails crossed', 'Refund rate 12.0 % is above the limit of 10.0 %.'],
      ],
    });
    // The breach is marked in the card, as in the table.
    const b = screen.getByTestId('exp-arm-card-b');
    expect(b.querySelectorAll('[data-breach]')).toHaveLength(1);
    expect(within(screen.getByTestId('exp-card-breaches-b')).getByRole('listitem').className).toBe('exp-breach');

    const control = card('a');
    expect(control.title).toBe('A · Control');
    expect(control.figures.map(([term]) => term)).toEqual([
      'Visitors',
      'Trial paid',
      'Chance to beat the control',
      'Expected loss',
      'Refund rate',
      'Early-leave rate',
    ]);
    expect(control.figures[2]).toEqual(['Chance to beat the control', 'This is the control']);
    expect(screen.getByTestId('exp-arm-card-a').querySelector('[data-breach]')).toBeNull();
  });

  it('gives the revenue per visitor in the card when it is the goal', () => {
    renderAnalysis(analysis(), experiment({ goal: { metric: 'revenue', days: 30 } }));
    const figures = card('a').figures;
    expect(figures[1]).toEqual(['Net revenue per visitor', '$0.60$0.41 – $0.82$720.00 in all']);
    expect(figures.map(([term]) => term)).not.toContain('Trial paid');
  });

  it(`shows an arm’s intervals only from ${MIN_VISITORS_FOR_RANGE} visitors`, () => {
    expect(MIN_VISITORS_FOR_RANGE).toBe(30);
    renderAnalysis(
      analysis({
        arms: [
          armFigures({ exposures: MIN_VISITORS_FOR_RANGE }),
          armFigures({
            key: 'b',
            name: 'Short',
            exposures: MIN_VISITORS_FOR_RANGE - 1,
            conversions: 1,
            conversionRate: 1 / 29,
            conversionInterval: { low: 0.006, high: 0.17 },
            netCents: 100,
            revenuePerVisitor: 100 / 29,
            revenueInterval: { low: 0.5, high: 9 },
          }),
        ],
      }),
    );
    // 30 visitors: the ranges.
    const a = cells('a');
    expect(a[3]).toBe('3.0 %2.1 % – 4.1 %');
    expect(a[4]).toBe('$0.60$0.41 – $0.82$720.00 in all');
    expect(card('a').figures[1]).toEqual(['Trial paid', '36 (3.0 %)2.1 % – 4.1 %']);
    // 29: the words instead, small and muted, in the table and in the card.
    const b = cells('b');
    expect(b[3]).toBe(`3.4 %${TOO_FEW_FOR_RANGE}`);
    expect(b[4]).toBe(`$0.03${TOO_FEW_FOR_RANGE}$1.00 in all`);
    expect(card('b').figures[1]).toEqual(['Trial paid', `1 (3.4 %)${TOO_FEW_FOR_RANGE}`]);
    const words = within(screen.getByTestId('exp-arm-row-b')).getAllByText(TOO_FEW_FOR_RANGE);
    expect(words).toHaveLength(2);
    for (const word of words) expect(word.className).toBe('admin-rate exp-few');
    expect(screen.getByTestId('exp-arm-row-b').textContent).not.toMatch(/–\s\$|%\s–/);
  });

  it('writes one fee, one chat and one visitor in the singular', () => {
    renderAnalysis(
      analysis({
        arms: [
          armFigures({ exposures: 1, fees: 1, refunds: 0, refundRate: 0, chatExposures: 1, earlyLeaves: 0, earlyLeaveRate: 0 }),
          armFigures({ key: 'b', name: 'Short', exposures: 2, fees: 2, refunds: 1, refundRate: 0.5, chatExposures: 2, earlyLeaves: 1, earlyLeaveRate: 0.5 }),
        ],
      }),
      experiment({ guardrails: { maxRefundRate: null, maxEarlyLeaveRate: null }, goal: { metric: 'trial_paid', days: 1 } }),
    );
    const a = cells('a');
    expect(a[7]).toBe('0.0 %0 of 1 fee');
    expect(a[8]).toBe('0.0 %0 of 1 chat');
    const b = cells('b');
    expect(b[7]).toBe('50.0 %1 of 2 fees');
    expect(b[8]).toBe('50.0 %1 of 2 chats');
    expect(plainText(screen.getByTestId('exp-running').textContent)).toBe(
      'Running for 9 days. Goal: trial paid within 1 day.',
    );
  });

  it('says how long it has run: less than a day, 1 day, N days, or for how long a stopped one ran', () => {
    const running = (days: number, exp: Experiment = experiment()) => {
      const { unmount } = renderAnalysis(analysis({ daysRunning: days }), exp);
      const text = plainText(screen.getByTestId('exp-running').textContent);
      unmount();
      return text;
    };
    expect(running(0)).toBe('Running for less than a day. Goal: trial paid within 14 days.');
    expect(running(1)).toBe('Running for 1 day. Goal: trial paid within 14 days.');
    expect(running(12)).toBe('Running for 12 days. Goal: trial paid within 14 days.');
    const stopped = experiment({ status: 'stopped', endedAt: '2026-11-12T10:00:00Z' });
    expect(running(10, stopped)).toBe('Ran for 10 days. Goal: trial paid within 14 days.');
    expect(running(1, stopped)).toBe('Ran for 1 day. Goal: trial paid within 14 days.');
    expect(running(0, stopped)).toBe('Ran for less than a day. Goal: trial paid within 14 days.');
    expect(screen.queryByText(/days of data/)).toBeNull();
  });

  it('never shows a negative zero, as when a loss comes back as -0.0', () => {
    renderAnalysis(
      analysis({
        arms: [
          armFigures(),
          armFigures({
            key: 'b',
            name: 'Short',
            conversion: { chanceToBeat: 0.5, expectedLoss: -0, expectedLossControl: -0.000001, difference: -0.00001 },
            revenue: { chanceToBeat: 0.5, expectedLoss: -0, expectedLossControl: -0.0001, difference: -0.001 },
          }),
        ],
      }),
      experiment({ goal: { metric: 'revenue', days: 30 } }),
    );
    const [, , , , , chance, loss] = cells('b');
    expect(chance).toBe('50.0 %$0.00 vs controlTrial paid: 50.0 %');
    expect(loss).toBe('$0.00 per visitorTrial paid: 0.00 pp');
    expect(cells('a')[6]).toBe('$0.00 per visitorTrial paid: 0.00 pp');
    expect(screen.getByTestId('exp-analysis').textContent).not.toMatch(/[-−]\$?0\.0/);
  });

  it('leads with the revenue when that is the goal, in dollars', () => {
    renderAnalysis(
      analysis({
        arms: [
          armFigures(),
          armFigures({
            key: 'b',
            name: 'Refundable',
            conversion: { chanceToBeat: 0.4, expectedLoss: 0.003, expectedLossControl: 0.001, difference: -0.002 },
            revenue: { chanceToBeat: 0.962, expectedLoss: 0.8, expectedLossControl: 12, difference: 14 },
          }),
        ],
      }),
      experiment({ goal: { metric: 'revenue', days: 30 } }),
    );
    const row = within(screen.getByTestId('exp-arm-row-b'));
    expect(row.getByText(/96\.2/)).toBeTruthy();
    const [, , , , , chance, loss] = cells('b');
    expect(chance).toBe('96.2 %+$0.14 vs controlTrial paid: 40.0 %');
    expect(loss).toBe('$0.008 per visitorTrial paid: 0.30 pp');
  });
});
