const EMPTY = '—';

/** `2025-05-04 13:02:11 UTC`: one unambiguous clock for comparing server records. */
export function formatTimestamp(value: string | null | undefined): string {
  if (!value) return EMPTY;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function formatText(value: string | null | undefined): string {
  return value === null || value === undefined || value === '' ? EMPTY : value;
}

export function formatYesNo(value: boolean): string {
  return value ? 'Yes' : 'No';
}
