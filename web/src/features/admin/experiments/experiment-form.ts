// The experiment editor's model: a definition as its fields hold it (numbers as typed, rates in
// percent, a loss in percentage points or dollars), and back, with the problems of what cannot be
// read. Problems carry the server's field names (`name`, `scope.campaigns`, `arms.1.flow`, ...).
import type { Definition, FlowChoice, Funnel, Metric, Problem } from './experiments-api';

export const MIN_ARMS = 2;
export const MAX_ARMS = 4;

export type ArmForm = {
  /** The row's own id (arms move when one is removed). */
  id: number;
  name: string;
  /** '' for the routing's choice, else "name@version". */
  flow: string;
  /** '' for the scope's funnel. */
  offer: '' | Funnel;
  weight: string;
};

export type FormValues = {
  name: string;
  funnel: Funnel;
  /** Comma or newline separated. */
  campaigns: string;
  keywords: string;
  arms: ArmForm[];
  metric: Metric;
  days: string;
  /** Percent; empty for no limit. */
  maxRefundRate: string;
  maxEarlyLeaveRate: string;
  minExposures: string;
  minDays: string;
  /** Percent. */
  chance: string;
  /** Percentage points (trial paid) or dollars per visitor (revenue). */
  maxLoss: string;
  autoPromote: boolean;
};

/** A new experiment: A "Control" and B "Variant" half and half, trial paid in 14 days. */
export const DEFAULT_DEFINITION: Definition = {
  name: '',
  scope: { funnel: 'chat', campaigns: [], keywords: [] },
  arms: [
    { name: 'Control', flow: null, offer: null, weight: 50 },
    { name: 'Variant', flow: null, offer: null, weight: 50 },
  ],
  goal: { metric: 'trial_paid', days: 14 },
  guardrails: { maxRefundRate: null, maxEarlyLeaveRate: null },
  rule: { minExposures: 1000, minDays: 7, chance: 0.95, maxLoss: 0.002 },
  autoPromote: false,
};

/** The loss a new rule allows, as the field holds it: 0.2 pp, or $0.05 per visitor. */
export const DEFAULT_LOSS: Record<Metric, string> = { trial_paid: '0.2', revenue: '0.05' };

/** The names a new arm gets, by position. */
export const ARM_NAMES = ['Control', 'Variant', 'Variant 2', 'Variant 3'];

let nextArmId = 1;

/** A number without the float's noise: 0.002 * 100 -> "0.2", not "0.19999999999999998". */
function plain(value: number): string {
  return String(Number(value.toPrecision(12)));
}

export function flowValue(flow: { name: string; version: number } | null): string {
  return flow ? `${flow.name}@${flow.version}` : '';
}

export function flowOf(value: string): { name: string; version: number } | null {
  const at = value.lastIndexOf('@');
  if (value === '' || at < 1) return null;
  return { name: value.slice(0, at), version: Number(value.slice(at + 1)) };
}

export function newArm(index: number): ArmForm {
  return { id: nextArmId++, name: ARM_NAMES[index] ?? `Variant ${index}`, flow: '', offer: '', weight: '50' };
}

/** The fields of a definition. */
export function formOf(definition: Definition): FormValues {
  const { scope, goal, guardrails, rule } = definition;
  return {
    name: definition.name,
    funnel: scope.funnel,
    campaigns: scope.campaigns.join(', '),
    keywords: scope.keywords.join('\n'),
    arms: definition.arms.map((arm) => ({
      id: nextArmId++,
      name: arm.name,
      flow: flowValue(arm.flow),
      offer: arm.offer ?? '',
      weight: String(arm.weight),
    })),
    metric: goal.metric,
    days: String(goal.days),
    maxRefundRate: guardrails.maxRefundRate === null ? '' : plain(guardrails.maxRefundRate * 100),
    maxEarlyLeaveRate: guardrails.maxEarlyLeaveRate === null ? '' : plain(guardrails.maxEarlyLeaveRate * 100),
    minExposures: String(rule.minExposures),
    minDays: String(rule.minDays),
    chance: plain(rule.chance * 100),
    // A rate as percentage points; cents as dollars.
    maxLoss: goal.metric === 'trial_paid' ? plain(rule.maxLoss * 100) : plain(rule.maxLoss / 100),
    autoPromote: definition.autoPromote,
  };
}

/** "123, 456\n789" -> ["123", "456", "789"]: each once, in their order. */
export function splitList(text: string): string[] {
  const items = text
    .split(/[,\n]/)
    .map((item) => item.trim().replace(/\s+/g, ' '))
    .filter((item) => item !== '');
  return [...new Set(items)];
}

const WHOLE = /^\d+$/;
const DECIMAL = /^\d+(\.\d+)?$|^\.\d+$/;

function decimal(text: string): number | null {
  const trimmed = text.trim().replace(/,/g, '.');
  return DECIMAL.test(trimmed) ? Number(trimmed) : null;
}

function whole(text: string): number | null {
  const trimmed = text.trim();
  return WHOLE.test(trimmed) && Number.isSafeInteger(Number(trimmed)) ? Number(trimmed) : null;
}

/** Rounded to `digits` decimals, without the float's noise. */
function round(value: number, digits: number): number {
  return Number(value.toFixed(digits));
}

/**
 * The definition the fields hold, or the problems of the fields that cannot be read (the server
 * checks everything else): percentages become fractions, a loss in percentage points a rate, a
 * loss in dollars cents.
 */
export function definitionOf(form: FormValues): { definition: Definition | null; problems: Problem[] } {
  const problems: Problem[] = [];
  const need = <T>(value: T | null, field: string, message: string): T => {
    if (value === null) problems.push({ field, message });
    return value as T;
  };

  const arms = form.arms.map((arm, index) => ({
    name: arm.name.trim(),
    flow: flowOf(arm.flow),
    offer: arm.offer === '' ? null : arm.offer,
    weight: need(whole(arm.weight), `arms.${index}.weight`, 'Enter a whole number from 1 to 100.'),
  }));

  const days = need(whole(form.days), 'goal.days', 'Enter a whole number of days.');

  const percent = (text: string, field: string): number | null => {
    if (text.trim() === '') return null;
    const value = decimal(text);
    if (value === null || value > 100) {
      problems.push({ field, message: 'Enter a percentage from 0 to 100, or leave it empty for no limit.' });
      return null;
    }
    return round(value / 100, 6);
  };
  const maxRefundRate = percent(form.maxRefundRate, 'guardrails.maxRefundRate');
  const maxEarlyLeaveRate = percent(form.maxEarlyLeaveRate, 'guardrails.maxEarlyLeaveRate');

  const minExposures = need(whole(form.minExposures), 'rule.minExposures', 'Enter a whole number of exposures.');
  const minDays = need(whole(form.minDays), 'rule.minDays', 'Enter a whole number of days.');
  let chance = decimal(form.chance);
  if (chance === null || chance <= 0 || chance >= 100) {
    problems.push({ field: 'rule.chance', message: 'Enter a percentage above 0 and below 100, such as 95.' });
    chance = null;
  }
  const loss = decimal(form.maxLoss);
  if (loss === null) {
    problems.push({
      field: 'rule.maxLoss',
      message:
        form.metric === 'trial_paid'
          ? 'Enter the loss in percentage points, such as 0.2.'
          : 'Enter the loss in dollars per visitor, such as 0.05.',
    });
  }

  if (problems.length > 0) return { definition: null, problems };
  return {
    definition: {
      name: form.name.trim(),
      // A keyword's words in lower case, as the routing keeps them (a keyword matches in any case).
      scope: {
        funnel: form.funnel,
        campaigns: splitList(form.campaigns),
        keywords: splitList(form.keywords.toLowerCase()),
      },
      arms,
      goal: { metric: form.metric, days },
      guardrails: { maxRefundRate, maxEarlyLeaveRate },
      rule: {
        minExposures,
        minDays,
        chance: round((chance as number) / 100, 6),
        // Percentage points -> a rate (0.2 -> 0.002); dollars -> cents (0.05 -> 5).
        maxLoss: form.metric === 'trial_paid' ? round((loss as number) / 100, 8) : round((loss as number) * 100, 4),
      },
      autoPromote: form.autoPromote,
    },
    problems,
  };
}

/** The fields problems are shown at: the definition's, each arm's, and their groups. */
export function fieldKeys(arms: number): string[] {
  const keys = [
    'name',
    'scope',
    'scope.funnel',
    'scope.campaigns',
    'scope.keywords',
    'arms',
    'goal',
    'goal.metric',
    'goal.days',
    'guardrails',
    'guardrails.maxRefundRate',
    'guardrails.maxEarlyLeaveRate',
    'rule',
    'rule.minExposures',
    'rule.minDays',
    'rule.chance',
    'rule.maxLoss',
    'autoPromote',
  ];
  for (let index = 0; index < arms; index += 1) {
    for (const part of ['', '.name', '.flow', '.offer', '.weight']) keys.push(`arms.${index}${part}`);
  }
  return keys;
}

/**
 * Each problem at the field it names, or at the nearest field that holds it (`scope.campaigns.2`
 * at `scope.campaigns`); the rest (no such field) for the top of the form.
 */
export function placeProblems(problems: Problem[], keys: string[]): { at: Map<string, string[]>; rest: Problem[] } {
  const known = new Set(keys);
  const at = new Map<string, string[]>();
  const rest: Problem[] = [];
  for (const problem of problems) {
    let field: string | null = problem.field;
    while (field !== null && !known.has(field)) {
      const dot: number = field.lastIndexOf('.');
      field = dot > 0 ? field.slice(0, dot) : null;
    }
    if (field === null) rest.push(problem);
    else at.set(field, [...(at.get(field) ?? []), problem.message]);
  }
  return { at, rest };
}

/** The flow versions an arm may choose, each "name vN", the published one marked. */
export function flowOptions(flows: FlowChoice[], current: string): { value: string; label: string }[] {
  const options = flows.flatMap((flow) =>
    [...flow.versions]
      .sort((a, b) => b - a)
      .map((version) => ({
        value: `${flow.name}@${version}`,
        label: `${flow.name} v${version}${version === flow.published ? ' (published)' : ''}`,
      })),
  );
  const chosen = flowOf(current);
  if (chosen && !options.some((option) => option.value === current)) {
    options.push({ value: current, label: `${chosen.name} v${chosen.version}` });
  }
  return [{ value: '', label: 'Routing’s choice' }, ...options];
}

/** Each arm's share of the visitors as its weight sets it (null where a weight is not a number). */
export function shares(arms: ArmForm[]): (number | null)[] {
  const weights = arms.map((arm) => whole(arm.weight));
  const total = weights.reduce<number>((sum, weight) => sum + (weight ?? 0), 0);
  return weights.map((weight) => (weight === null || total === 0 ? null : weight / total));
}
