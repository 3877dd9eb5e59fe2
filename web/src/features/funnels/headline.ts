// The spec's headline rules (section 2, "Help funnel" and "Chat funnel"). The server computes the
// chat headline too; the chat page shows this one only until the server's arrives.

export type ChatFunnelKind = 'chat' | 'refundable';

/** 'yahoo  MAIL' -> 'Yahoo Mail'; blank -> ''. */
export function titleCase(keyword: string): string {
  return keyword
    .trim()
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase())
    .join(' ');
}

export function chatHeadline(funnel: ChatFunnelKind, keyword?: string | null): string {
  const topic = titleCase(keyword ?? '');
  if (topic !== '') return `Need ${topic} Assistance? Get Instant Expert Assistance Now`;
  return funnel === 'refundable'
    ? 'Need Help? Get Instant Expert Help Now!'
    : 'Need Help? Get Instant Expert Assistance Now!';
}

export function helpHeadline(keyword?: string | null): string {
  const topic = titleCase(keyword ?? '');
  return topic === '' ? 'Need Instant Online Help?' : `Need ${topic} Help? Get Instant Expert Help Now!`;
}
