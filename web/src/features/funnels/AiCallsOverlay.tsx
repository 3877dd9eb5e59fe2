import { formatAiEventTime, latestAiEvents } from './ai-events';
import type { AiCallEvent } from './api';

/** Debug tools only: the last AI provider calls made for this visitor, newest first. */
export function AiCallsOverlay({ events }: { events: AiCallEvent[] }) {
  const shown = latestAiEvents(events);
  return (
    <aside className="ai-calls" aria-label="AI calls (debug)">
      {/* Folds away so it never hides the page on a small screen. */}
      <details open>
        <summary className="ai-calls__title">AI calls (debug)</summary>
        {shown.length === 0 ? (
          <p className="ai-calls__empty">No AI calls yet.</p>
        ) : (
          <ol className="ai-calls__list">
            {shown.map((event, index) => (
              <li key={index} className="ai-calls__item">
                <span className="ai-calls__time">{formatAiEventTime(event.time)}</span>{' '}
                <span className="ai-calls__kind">{event.kind}</span>{' '}
                <span className={`ai-calls__outcome ai-calls__outcome--${event.outcome === 'ok' ? 'ok' : 'other'}`}>
                  {event.outcome}
                </span>{' '}
                <span className="ai-calls__duration">
                  {event.durationMs === null ? '–' : `${Math.round(event.durationMs)} ms`}
                </span>
              </li>
            ))}
          </ol>
        )}
      </details>
    </aside>
  );
}
