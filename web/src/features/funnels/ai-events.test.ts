import { latestAiEvents } from './ai-events';
import type { AiCallEvent } from './api';

function event(time: string | number, kind: string): AiCallEvent {
  return { time, kind, outcome: 'ok', durationMs: 10 };
}

describe('latestAiEvents', () => {
  it('puts the newest first and keeps five', () => {
    const events = [1, 2, 3, 4, 5, 6].map((n) => event(`2025-05-04T10:00:0${n}Z`, `call ${n}`));
    expect(latestAiEvents(events).map((e) => e.kind)).toEqual(['call 6', 'call 5', 'call 4', 'call 3', 'call 2']);
  });

  it('sorts by time even when the server listed them out of order', () => {
    expect(latestAiEvents([event(2000, 'b'), event(1000, 'a'), event(3000, 'c')]).map((e) => e.kind)).toEqual([
      'c',
      'b',
      'a',
    ]);
  });

  it("reverses the server's order when a time cannot be read", () => {
    expect(latestAiEvents([event('soon', 'a'), event('later', 'b')]).map((e) => e.kind)).toEqual(['b', 'a']);
  });
});
