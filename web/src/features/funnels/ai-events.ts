import type { AiCallEvent } from './api';

/** The debug overlay keeps this many entries (spec section 9). */
export const AI_EVENTS_SHOWN = 5;

function timestamp(event: AiCallEvent): number {
  return typeof event.time === 'number' ? event.time : Date.parse(event.time);
}

/** The newest first: by time when every event has one, else the server's order reversed. */
export function latestAiEvents(events: AiCallEvent[], count = AI_EVENTS_SHOWN): AiCallEvent[] {
  const newestFirst = [...events].reverse();
  if (events.every((event) => Number.isFinite(timestamp(event)))) {
    newestFirst.sort((a, b) => timestamp(b) - timestamp(a));
  }
  return newestFirst.slice(0, count);
}

export function formatAiEventTime(time: AiCallEvent['time']): string {
  const date = new Date(typeof time === 'number' ? time : Date.parse(time));
  return Number.isNaN(date.getTime()) ? String(time) : date.toLocaleTimeString();
}
