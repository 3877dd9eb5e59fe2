import {
  DEFAULT_DEFINITION,
  definitionOf,
  fieldKeys,
  flowOptions,
  formOf,
  placeProblems,
  shares,
  splitList,
} from './experiment-form';
import {
  formatCents,
  formatDifference,
  formatLoss,
  formatP,
  formatPercent,
  formatPoints,
  formatShare,
  formatSmallCents,
  plural,
  runningSentence,
  scopeSummary,
  srmSentence,
} from './experiments-format';
import { experiment, FLOWS, plainText } from './test-fixtures';

describe('the experiment form', () => {
  it('holds a new experiment’s defaults as the operator reads them', () => {
    const form = formOf(DEFAULT_DEFINITION);
    expect(form.arms.map((arm) => [arm.name, arm.weight, arm.flow, arm.offer])).toEqual([
      ['Control', '50', '', ''],
      ['Variant', '50', '', ''],
    ]);
    expect(form).toMatchObject({
      funnel: 'chat',
      metric: 'trial_paid',
      days: '14',
      minExposures: '1000',
      minDays: '7',
      chance: '95',
      maxLoss: '0.2',
      maxRefundRate: '',
      maxEarlyLeaveRate: '',
      autoPromote: false,
    });
    // And back, unchanged.
    expect(definitionOf(form)).toEqual({ definition: DEFAULT_DEFINITION, problems: [] });
  });

  it('sends percentages as fractions, percentage points as a rate, and dollars as cents', () => {
    const form = formOf(DEFAULT_DEFINITION);
    const trial = definitionOf({ ...form, maxRefundRate: '10', maxEarlyLeaveRate: '35.5', chance: '97.5', maxLoss: '0.15' });
    expect(trial.definition?.guardrails).toEqual({ maxRefundRate: 0.1, maxEarlyLeaveRate: 0.355 });
    expect(trial.definition?.rule).toEqual({ minExposures: 1000, minDays: 7, chance: 0.975, maxLoss: 0.0015 });

    const revenue = definitionOf({ ...form, metric: 'revenue', maxLoss: '0.05' });
    expect(revenue.definition?.goal.metric).toBe('revenue');
    expect(revenue.definition?.rule.maxLoss).toBe(5);
    expect(definitionOf({ ...form, metric: 'revenue', maxLoss: '1.10' }).definition?.rule.maxLoss).toBe(110);

    // And read back: a revenue loss in cents is dollars in its field.
    expect(formOf({ ...DEFAULT_DEFINITION, goal: { metric: 'revenue', days: 30 }, rule: { ...DEFAULT_DEFINITION.rule, maxLoss: 5 } }).maxLoss).toBe('0.05');
    expect(formOf({ ...DEFAULT_DEFINITION, guardrails: { maxRefundRate: 0.07, maxEarlyLeaveRate: 0.355 } })).toMatchObject({
      maxRefundRate: '7',
      maxEarlyLeaveRate: '35.5',
    });
  });

  it('reads campaign ids and keywords separated by commas or lines, each once', () => {
    expect(splitList('123, 456\n789,,\n 123 ')).toEqual(['123', '456', '789']);
    expect(splitList('printer  help\nemail')).toEqual(['printer help', 'email']);
    expect(splitList('  ')).toEqual([]);
    const form = formOf(DEFAULT_DEFINITION);
    // A keyword's words in lower case, as the routing keeps them.
    expect(definitionOf({ ...form, campaigns: '1,2', keywords: 'WiFi\nprinter, Printer' }).definition?.scope).toEqual({
      funnel: 'chat',
      campaigns: ['1', '2'],
      keywords: ['wifi', 'printer'],
    });
  });

  it('keeps the arms’ flows and offers, and says which fields cannot be read', () => {
    const form = formOf(experiment());
    expect(form.arms[1]).toMatchObject({ flow: 'default@3', offer: 'refundable' });
    expect(definitionOf(form).definition?.arms[1]).toEqual({
      name: 'Short',
      flow: { name: 'default', version: 3 },
      offer: 'refundable',
      weight: 50,
    });

    const bad = definitionOf({
      ...form,
      arms: form.arms.map((arm, index) => (index === 1 ? { ...arm, weight: 'half' } : arm)),
      days: '',
      chance: '100',
      maxLoss: 'a lot',
      maxRefundRate: '120',
    });
    expect(bad.definition).toBeNull();
    expect(bad.problems.map((problem) => problem.field)).toEqual([
      'arms.1.weight',
      'goal.days',
      'guardrails.maxRefundRate',
      'rule.chance',
      'rule.maxLoss',
    ]);
  });

  it('puts each problem at its field, or the nearest one, and the rest at the top', () => {
    const { at, rest } = placeProblems(
      [
        { field: 'name', message: 'Enter a name.' },
        { field: 'arms.1.flow', message: 'That version is not published.' },
        { field: 'scope.campaigns.2', message: 'Campaign “x” is not a number.' },
        { field: 'arms.3.weight', message: 'No such arm.' },
        { field: 'overlaps', message: 'It overlaps another experiment.' },
      ],
      fieldKeys(2),
    );
    expect(at.get('name')).toEqual(['Enter a name.']);
    expect(at.get('arms.1.flow')).toEqual(['That version is not published.']);
    expect(at.get('scope.campaigns')).toEqual(['Campaign “x” is not a number.']);
    // Arm D is not on the form: its problem is at the arms.
    expect(at.get('arms')).toEqual(['No such arm.']);
    expect(rest).toEqual([{ field: 'overlaps', message: 'It overlaps another experiment.' }]);
  });

  it('offers the routing’s choice or any flow version, the published one marked', () => {
    expect(flowOptions(FLOWS, '').map((option) => option.label)).toEqual([
      'Routing’s choice',
      'default v3 (published)',
      'default v2',
      'default v1',
      'email v1 (published)',
    ]);
    // A version no longer listed stays choosable where it is chosen.
    expect(flowOptions(FLOWS, 'gone@4').at(-1)).toEqual({ value: 'gone@4', label: 'gone v4' });
  });

  it('says each arm’s share of the visitors', () => {
    const form = formOf(DEFAULT_DEFINITION);
    expect(shares([...form.arms, { ...form.arms[0], id: 99, weight: '100' }])).toEqual([0.25, 0.25, 0.5]);
    expect(shares([{ ...form.arms[0], weight: '' }, form.arms[1]])).toEqual([null, 1]);
  });
});

describe('the figures’ words', () => {
  it('writes rates, shares, losses and p-values', () => {
    expect(plainText(formatPercent(0.973))).toBe('97.3 %');
    expect(formatPercent(null)).toBe('–');
    expect(plainText(formatShare(0.5))).toBe('50 %');
    expect(plainText(formatShare(1 / 3))).toBe('33.3 %');
    expect(plainText(formatLoss('trial_paid', 0.0004))).toBe('0.04 pp');
    expect(formatLoss('revenue', 12.5)).toBe('$0.125 per visitor');
    expect(formatLoss('revenue', 150)).toBe('$1.50 per visitor');
    expect(formatP(0.0003)).toBe('p = 0.0003');
    expect(formatP(0.00001)).toBe('p < 0.0001');
  });

  it('writes a count with its noun in the singular for one, else in the plural', () => {
    expect(plural(1, 'day')).toBe('1 day');
    expect(plural(2, 'day')).toBe('2 days');
    expect(plural(0, 'fee')).toBe('0 fees');
    expect(plural(1, 'chat')).toBe('1 chat');
    expect(plural(1200, 'visitor')).toBe('1,200 visitors');
    expect(plural(1, 'person', 'people')).toBe('1 person');
    expect(plural(3, 'person', 'people')).toBe('3 people');
  });

  it('never writes a negative zero: -0.0, and small negatives that round to zero, lose their sign', () => {
    expect(plainText(formatPoints(-0))).toBe('0.00 pp');
    expect(plainText(formatPoints(-0.000001))).toBe('0.00 pp');
    expect(plainText(formatPoints(-0.000001, true))).toBe('0.00 pp');
    expect(plainText(formatPoints(-0.0004))).toBe('−0.04 pp');
    expect(plainText(formatPoints(0.0141, true))).toBe('+1.41 pp');
    expect(formatSmallCents(-0)).toBe('$0.00');
    expect(formatSmallCents(-0.01, true)).toBe('$0.00');
    expect(formatSmallCents(-1.5, true)).toBe('−$0.015');
    expect(formatCents(-0)).toBe('$0.00');
    expect(formatCents(-0.4)).toBe('$0.00');
    expect(formatCents(-150)).toBe('-$1.50');
    expect(formatCents(100)).toBe('$1.00');
    expect(plainText(formatPercent(-0))).toBe('0.0 %');
    expect(plainText(formatPercent(-0.0001))).toBe('0.0 %');
    expect(plainText(formatShare(-0))).toBe('0 %');
    expect(formatLoss('revenue', -0)).toBe('$0.00 per visitor');
    expect(plainText(formatLoss('trial_paid', -0))).toBe('0.00 pp');
    expect(formatDifference('revenue', -0)).toBe('$0.00');
  });

  it('says how long an experiment has run', () => {
    expect(runningSentence(0, 'running', true)).toBe('Running for less than a day');
    expect(runningSentence(1, 'running', true)).toBe('Running for 1 day');
    expect(runningSentence(2, 'running', true)).toBe('Running for 2 days');
    expect(runningSentence(0, 'stopped', true)).toBe('Ran for less than a day');
    expect(runningSentence(1, 'stopped', true)).toBe('Ran for 1 day');
    expect(runningSentence(9, 'archived', true)).toBe('Ran for 9 days');
    expect(runningSentence(3, 'paused', true)).toBe('Paused, started 3 days ago');
    expect(runningSentence(0, 'paused', true)).toBe('Paused, started less than a day ago');
    expect(runningSentence(0, 'archived', false)).toBe('Never started');
  });

  it('sums up a scope', () => {
    expect(scopeSummary({ funnel: 'refundable', campaigns: [], keywords: [] })).toBe(
      'Refundable-fee chat (/Chat-Help-2): every visitor',
    );
    expect(scopeSummary({ funnel: 'chat', campaigns: ['1', '2'], keywords: ['wifi'] })).toBe(
      'Chat funnel (/chat-help): campaigns 1, 2; keyword wifi',
    );
  });

  it('says a sample ratio mismatch as the operator reads it', () => {
    expect(
      plainText(srmSentence({ pValue: 0.0003, warning: true, expectedShares: [0.5, 0.5], observedShares: [0.521, 0.479] })),
    ).toBe(
      'Sample ratio mismatch: the arms got 52.1 % / 47.9 % of visitors where 50 % / 50 % was set (p = 0.0003). Check redirects and bots before trusting the result.',
    );
  });
});
