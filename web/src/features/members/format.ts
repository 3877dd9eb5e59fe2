/** 'January 8, 2030' in the person's own time zone; null for a date the browser cannot read. */
export function formatTrialEnd(value: string): string | null {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return null;
  return date.toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric' });
}
