// The experiments' answers as the contract (docs/experiments-api.md) gives them, for the tests.
import type { Analysis, ArmFigures, Experiment, ExperimentDetail, FlowChoice } from './experiments-api';

export const FLOWS: FlowChoice[] = [
  { name: 'default', versions: [1, 2, 3], published: 3 },
  { name: 'email', versions: [1], published: 1 },
];

export function experiment(changes: Partial<Experiment> = {}): Experiment {
  return {
    id: 'exp1',
    name: 'Shorter greeting',
    scope: { funnel: 'chat', campaigns: ['123'], keywords: [] },
    arms: [
      { key: 'a', name: 'Control', flow: null, offer: null, weight: 50 },
      { key: 'b', name: 'Short', flow: { name: 'default', version: 3 }, offer: 'refundable', weight: 50 },
    ],
    goal: { metric: 'trial_paid', days: 14 },
    guardrails: { maxRefundRate: 0.1, maxEarlyLeaveRate: null },
    rule: { minExposures: 1000, minDays: 7, chance: 0.95, maxLoss: 0.002 },
    autoPromote: false,
    status: 'running',
    createdAt: '2026-11-01T09:00:00Z',
    createdBy: 'ann@example.com',
    startedAt: '2026-11-02T10:00:00Z',
    endedAt: null,
    winner: null,
    promotedAt: null,
    promotedBy: null,
    ...changes,
  };
}

export function armFigures(changes: Partial<ArmFigures> = {}): ArmFigures {
  return {
    key: 'a',
    name: 'Control',
    exposures: 1200,
    conversions: 36,
    conversionRate: 0.03,
    conversionInterval: { low: 0.021, high: 0.041 },
    netCents: 72000,
    revenuePerVisitor: 60,
    revenueInterval: { low: 41, high: 82 },
    fees: 40,
    refunds: 2,
    refundRate: 0.05,
    chatExposures: 1100,
    earlyLeaves: 330,
    earlyLeaveRate: 0.3,
    conversion: null,
    revenue: null,
    guardrailBreaches: [],
    ...changes,
  };
}

export function analysis(changes: Partial<Analysis> = {}): Analysis {
  return {
    daysRunning: 9,
    arms: [
      armFigures(),
      armFigures({
        key: 'b',
        name: 'Short',
        exposures: 1180,
        conversions: 52,
        conversionRate: 0.0441,
        conversionInterval: { low: 0.033, high: 0.057 },
        revenuePerVisitor: 75.5,
        revenueInterval: { low: 55, high: 97 },
        refunds: 6,
        fees: 50,
        refundRate: 0.12,
        conversion: { chanceToBeat: 0.973, expectedLoss: 0.0004, expectedLossControl: 0.0141, difference: 0.0141 },
        revenue: { chanceToBeat: 0.81, expectedLoss: 1.5, expectedLossControl: 15, difference: 15.5 },
        guardrailBreaches: ['Refund rate 12.0 % is above the limit of 10.0 %.'],
      }),
    ],
    srm: { pValue: 0.61, warning: false, expectedShares: [0.5, 0.5], observedShares: [0.504, 0.496] },
    decision: { state: 'winner', arm: 1 },
    status: 'B wins: 97.3 % chance to beat A, expected loss 0.0004.',
    promotable: 'b',
    ...changes,
  };
}

export function detail(changes: Partial<ExperimentDetail> = {}): ExperimentDetail {
  return {
    experiment: experiment(),
    analysis: analysis(),
    history: [
      { at: '2026-11-01T09:00:00Z', by: 'ann@example.com', kind: 'created', arm: null, note: null },
      { at: '2026-11-02T10:00:00Z', by: 'ann@example.com', kind: 'started', arm: null, note: null },
    ],
    ...changes,
  };
}

/** The requests made to `path` (method and path), with their JSON bodies. */
export function requests(fetchMock: { mock: { calls: unknown[][] } }, method: string, path: string): unknown[] {
  return fetchMock.mock.calls
    .filter(([input, init]) => {
      const url = new URL(String(input), 'http://localhost');
      return url.pathname === path && ((init as RequestInit | undefined)?.method ?? 'GET') === method;
    })
    .map(([, init]) => {
      const body = (init as RequestInit | undefined)?.body;
      return body ? JSON.parse(String(body)) : null;
    });
}

/** Text as a reader sees it: non-breaking spaces as spaces. */
export function plainText(text: string | null | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}
