import { useEffect, useState } from 'react';
import { adminApi, type Live } from './api';
import { formatCount } from './format';

const POLL_MS = 5000;
/** How far back the per-minute rate looks. */
const WINDOW_MS = 60_000;

type Sample = { at: number; live: Live };

/** Messages a minute over the samples' span (at least two samples, 5 s apart, are needed). */
export function perMinute(samples: Sample[], pick: (live: Live) => number): number | null {
  if (samples.length < 2) return null;
  const first = samples[0];
  const last = samples[samples.length - 1];
  const minutes = (last.at - first.at) / 60_000;
  if (minutes <= 0) return null;
  return Math.max(0, Math.round((pick(last.live) - pick(first.live)) / minutes));
}

/**
 * Live: what this server holds now and does each minute, read every 5 seconds from the same
 * figures as `/metrics` (this process's; a cluster's processes each report their own).
 */
export function LivePanel() {
  const [samples, setSamples] = useState<Sample[]>([]);
  const [failed, setFailed] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = () => {
      adminApi
        .live(controller.signal)
        .then((live) => {
          const at = Date.now();
          setFailed(false);
          setSamples((current) => [...current.filter((sample) => at - sample.at <= WINDOW_MS), { at, live }]);
        })
        .catch(() => {
          if (!controller.signal.aborted) setFailed(true);
        })
        .finally(() => {
          if (!controller.signal.aborted) timer = setTimeout(poll, POLL_MS);
        });
    };
    poll();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, []);

  const latest = samples.at(-1)?.live;
  const messages = perMinute(samples, (live) => live.messagesStored);
  const aiCalls = perMinute(samples, (live) => live.aiCalls);
  const rate = (value: number | null) => (value === null ? null : formatCount(value));
  const tiles: [string, string | null][] = latest
    ? [
        ['Conversations open', formatCount(latest.funnelConversations)],
        ["Members' chats open", formatCount(latest.memberChats)],
        ['Messages a minute', rate(messages)],
        ['AI calls a minute', rate(aiCalls)],
        // A failure is a provider error or a time-out; the offline helper's designed replies are
        // counted apart, as scripted, not failed.
        ['AI calls failed since start', `${formatCount(latest.aiFailures)} of ${formatCount(latest.aiCalls)}`],
        ['Scripted replies since start', formatCount(latest.aiScripted ?? 0)],
      ]
    : [];
  return (
    <section className="card admin-section" aria-labelledby="admin-live-title">
      <h2 id="admin-live-title" className="admin-section__title">
        Live
      </h2>
      {failed && (
        <p className="form__error" role="alert">
          The live figures could not be read. Trying again...
        </p>
      )}
      {latest ? (
        <dl className="admin-tiles">
          {tiles.map(([label, value]) => (
            <div key={label} className="admin-tile">
              <dt className="admin-tile__label">{label}</dt>
              {value === null ? (
                <dd className="admin-tile__value admin-tile__value--pending">Measuring...</dd>
              ) : (
                <dd className="admin-tile__value">{value}</dd>
              )}
            </div>
          ))}
        </dl>
      ) : (
        !failed && <p role="status">Reading the live figures...</p>
      )}
    </section>
  );
}
