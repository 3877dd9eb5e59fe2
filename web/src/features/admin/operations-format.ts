// Dates as the operator's tools show them, in UTC like the dashboard's days: "1 Nov 2026", and
// "1 Nov 2026, 14:05 UTC" for a moment. Built by hand: browsers differ on short month names
// ("Sep" or "Sept").

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "2026-11-01" or a full timestamp; null when it is not a date. */
function parse(value: string): Date | null {
  const date = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** "1 Nov 2026" (the day in UTC); anything that is no date as it came. */
export function formatDay(value: string): string {
  const date = parse(value);
  if (!date) return value;
  return `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

/** "1 Nov 2026, 14:05 UTC"; anything that is no date as it came. */
export function formatMoment(value: string): string {
  const date = parse(value);
  if (!date) return value;
  const time = [date.getUTCHours(), date.getUTCMinutes()].map((part) => String(part).padStart(2, '0')).join(':');
  return `${formatDay(value)}, ${time} UTC`;
}

/** "1 campaign", "3 campaigns". */
export function countOf(count: number, thing: string): string {
  return `${new Intl.NumberFormat('en-US').format(count)} ${thing}${count === 1 ? '' : 's'}`;
}
