// The draft editor's model: a flow script as its fields hold it (numbers as typed), and what
// differs from the published version, field by field.
import {
  NUMBER_KEYS,
  TEXT_KEYS,
  type Bounds,
  type FlowScript,
  type NumberKey,
  type Problem,
  type TextKey,
} from './flows-api';

export type FormValues = Record<TextKey | NumberKey, string>;

export type NumberField = { key: NumberKey; label: string; unit: 'ms' | 's'; min: number; max: number; hint: string };

/** The three numbers, with the bounds the server keeps them within. */
export function numberFields(bounds: Bounds): NumberField[] {
  return [
    {
      key: 'typingDelayMinMs',
      label: 'Shortest typing delay (ms)',
      unit: 'ms',
      min: bounds.typingMinMs,
      max: bounds.typingMaxMs,
      hint: 'The typing dots show for a random time between the shortest and the longest before each reply.',
    },
    {
      key: 'typingDelayMaxMs',
      label: 'Longest typing delay (ms)',
      unit: 'ms',
      min: bounds.typingMinMs,
      max: bounds.typingMaxMs,
      hint: 'At least the shortest delay.',
    },
    {
      key: 'autoCheckoutAfterS',
      label: 'Automatic checkout after (s)',
      unit: 's',
      min: bounds.autoCheckoutMinS,
      max: bounds.autoCheckoutMaxS,
      hint: 'The checkout opens by itself this long after the final message.',
    },
  ];
}

/** The labels of every field, the texts' as the server names them. */
export function fieldLabels(fields: { key: TextKey; label: string }[], bounds: Bounds): Map<string, string> {
  const labels = new Map<string, string>(fields.map((field) => [field.key, field.label]));
  for (const field of numberFields(bounds)) labels.set(field.key, field.label);
  return labels;
}

/** The fields of a script (empty ones without a script). */
export function formOf(script: FlowScript | null): FormValues {
  const values = {} as FormValues;
  for (const key of TEXT_KEYS) values[key] = script?.[key] ?? '';
  for (const key of NUMBER_KEYS) values[key] = String(script?.[key] ?? '');
  return values;
}

export function sameForm(a: FormValues, b: FormValues): boolean {
  return [...TEXT_KEYS, ...NUMBER_KEYS].every((key) => a[key] === b[key]);
}

/** Characters as the server counts them (Unicode scalar values: an emoji is one). */
export function charCount(text: string): number {
  return Array.from(text).length;
}

/**
 * The script the fields hold, or the problems of the numbers that are not whole numbers (the
 * server checks everything else).
 */
export function scriptOf(form: FormValues, fields: NumberField[]): { script: FlowScript | null; problems: Problem[] } {
  const problems: Problem[] = [];
  const script = {} as FlowScript;
  for (const key of TEXT_KEYS) script[key] = form[key];
  for (const field of fields) {
    const text = form[field.key].trim();
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) {
      const unit = field.unit === 'ms' ? 'milliseconds' : 'seconds';
      problems.push({
        field: field.key,
        message: `Enter a whole number of ${unit}, from ${field.min} to ${field.max}.`,
      });
    } else script[field.key] = value;
  }
  return problems.length > 0 ? { script: null, problems } : { script, problems };
}

export type FieldChange = { field: string; label: string; before: string | null; after: string };

/** The fields of `form` that differ from `published` (all of them when nothing is published). */
export function changesFrom(
  published: FlowScript | null,
  form: FormValues,
  labels: Map<string, string>,
): FieldChange[] {
  const before = published ? formOf(published) : null;
  return [...TEXT_KEYS, ...NUMBER_KEYS].flatMap((key) => {
    const was = before ? before[key] : null;
    return was === form[key] ? [] : [{ field: key, label: labels.get(key) ?? key, before: was, after: form[key] }];
  });
}

/** The problems of a field, by field. */
export function problemsByField(problems: Problem[]): Map<string, string[]> {
  const byField = new Map<string, string[]>();
  for (const problem of problems) byField.set(problem.field, [...(byField.get(problem.field) ?? []), problem.message]);
  return byField;
}
