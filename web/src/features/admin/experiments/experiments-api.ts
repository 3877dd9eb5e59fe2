// A/B experiments (issue 48): `/api/admin/experiments*`, as docs/experiments-api.md says.
// Admins only: the server answers 404 to everyone else. Amounts are cents, rates fractions.
import { apiRequest } from '../../../lib/api';
import { OFFER_NAMES, type Offer } from '../flows/flows-api';

export { failureOf, isUnavailable, type Failure, type Problem } from '../flows/flows-api';

/** /chat-help, /Chat-Help-2, /get-help. */
export type Funnel = Offer;

export const FUNNELS: Funnel[] = ['chat', 'refundable', 'help'];
export const FUNNEL_NAMES: Record<Funnel, string> = OFFER_NAMES;

export type ArmKey = 'a' | 'b' | 'c' | 'd';
export const ARM_KEYS: ArmKey[] = ['a', 'b', 'c', 'd'];

/** Both lists empty: every visitor of the funnel. */
export type Scope = { funnel: Funnel; campaigns: string[]; keywords: string[] };

export type Arm = {
  /** By position: 'a' is the control. */
  key?: ArmKey;
  name: string;
  /** A published flow version; null: the routing's choice. */
  flow: { name: string; version: number } | null;
  /** The funnel the arm's visitors meet; null: the scope's funnel. */
  offer: Funnel | null;
  weight: number;
};

export type Metric = 'trial_paid' | 'revenue';
export type Goal = { metric: Metric; days: number };
/** Fractions (0.1 = 10 %); null: no limit. */
export type Guardrails = { maxRefundRate: number | null; maxEarlyLeaveRate: number | null };
/** `maxLoss` in the goal's unit: a rate (0.002) for trial_paid, cents per visitor for revenue. */
export type Rule = { minExposures: number; minDays: number; chance: number; maxLoss: number };

export type Definition = {
  name: string;
  scope: Scope;
  arms: Arm[];
  goal: Goal;
  guardrails: Guardrails;
  rule: Rule;
  autoPromote: boolean;
};

export type Status = 'draft' | 'running' | 'paused' | 'stopped' | 'archived';

export type Experiment = Definition & {
  id: string;
  status: Status;
  createdAt: string;
  createdBy: string;
  startedAt: string | null;
  endedAt: string | null;
  /** The arm key promoted (or chosen at stop), if any. */
  winner: string | null;
  promotedAt: string | null;
  promotedBy: string | null;
};

export type Interval = { low: number; high: number };
export type Comparison = { chanceToBeat: number; expectedLoss: number; expectedLossControl: number; difference: number };

export type ArmFigures = {
  key: string;
  name: string;
  exposures: number;
  conversions: number;
  conversionRate: number;
  conversionInterval: Interval;
  netCents: number;
  /** Cents. */
  revenuePerVisitor: number;
  revenueInterval: Interval;
  fees: number;
  refunds: number;
  refundRate: number | null;
  chatExposures: number;
  earlyLeaves: number;
  earlyLeaveRate: number | null;
  /** Against the control (null for the control). */
  conversion: Comparison | null;
  revenue: Comparison | null;
  guardrailBreaches: string[];
};

export type Decision =
  | { state: 'collecting'; exposuresNeeded: number; daysNeeded: number }
  | { state: 'undecided' }
  | { state: 'winner'; arm: number };

export type Srm = { pValue: number; warning: boolean; expectedShares: number[]; observedShares: number[] };

export type Analysis = {
  daysRunning: number;
  arms: ArmFigures[];
  srm: Srm;
  decision: Decision;
  /** A sentence for the page. */
  status: string;
  /** The arm key the rule picks and the operator may promote with one click. */
  promotable: string | null;
};

export type RecordKind = 'created' | 'edited' | 'started' | 'paused' | 'resumed' | 'stopped' | 'promoted' | 'archived';
export type HistoryRecord = { at: string; by: string; kind: RecordKind; arm: string | null; note: string | null };

/** A flow's published versions an arm may follow, and the one the routing uses now (if any). */
export type FlowChoice = { name: string; versions: number[]; published: number | null };

export type ExperimentList = { experiments: Experiment[]; flows: FlowChoice[] };
export type ExperimentDetail = { experiment: Experiment; analysis: Analysis | null; history: HistoryRecord[] };

export type Action = 'start' | 'pause' | 'stop' | 'archive';

const BASE = '/api/admin/experiments';
const path = (id: string) => `${BASE}/${encodeURIComponent(id)}`;

/**
 * What is sent: the definition's fields only, not an experiment's own (id, status, dates). Each
 * arm carries the key of its place ('a' for the first): the server keys the arms by their place
 * anyway, but reads an arm without one as a bad body.
 */
export function definitionBody(definition: Definition): Definition {
  return {
    name: definition.name,
    scope: { funnel: definition.scope.funnel, campaigns: definition.scope.campaigns, keywords: definition.scope.keywords },
    arms: definition.arms.map((arm, index) => ({
      key: ARM_KEYS[index],
      name: arm.name,
      flow: arm.flow,
      offer: arm.offer,
      weight: arm.weight,
    })),
    goal: { metric: definition.goal.metric, days: definition.goal.days },
    guardrails: {
      maxRefundRate: definition.guardrails.maxRefundRate,
      maxEarlyLeaveRate: definition.guardrails.maxEarlyLeaveRate,
    },
    rule: {
      minExposures: definition.rule.minExposures,
      minDays: definition.rule.minDays,
      chance: definition.rule.chance,
      maxLoss: definition.rule.maxLoss,
    },
    autoPromote: definition.autoPromote,
  };
}

export const experimentsApi = {
  list: (signal?: AbortSignal) => apiRequest<ExperimentList>(BASE, { signal }),
  /** 201 with the new draft; 422 with problems. */
  create: (definition: Definition) =>
    apiRequest<Experiment>(BASE, { method: 'POST', body: definitionBody(definition) }),
  get: (id: string, signal?: AbortSignal) => apiRequest<ExperimentDetail>(path(id), { signal }),
  /** A draft only (409 `not_draft`); 422 with problems. */
  update: (id: string, definition: Definition) =>
    apiRequest<Experiment>(path(id), { method: 'PUT', body: definitionBody(definition) }),
  /** start: draft or paused -> running (409 `overlaps`, `wrong_status`); pause; stop; archive. */
  act: (id: string, action: Action) => apiRequest<Experiment>(`${path(id)}/${action}`, { method: 'POST' }),
  promote: (id: string, arm: string) =>
    apiRequest<Experiment>(`${path(id)}/promote`, { method: 'POST', body: { arm } }),
};

/** Arm 0 is A, the control. */
export function armLetter(index: number): string {
  return (ARM_KEYS[index] ?? String(index + 1)).toUpperCase();
}
