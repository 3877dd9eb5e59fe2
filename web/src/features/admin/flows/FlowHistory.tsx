import { useEffect, useState } from 'react';
import { formatMoment } from '../operations-format';
import { ChangeList } from './ChangeList';
import { flowsApi, type HistoryEntry } from './flows-api';
import { Section } from './parts';

export const HISTORY_LIMIT = 50;
export const HISTORY_UNREADABLE = 'The publish history could not be read. Please reload the page.';

/** What an entry did, in words: "Published “email” version 4 (from version 3)". */
export function entryText(entry: HistoryEntry): string {
  const flow = entry.flow ? `“${entry.flow}”` : 'the flows';
  switch (entry.kind) {
    case 'import':
      return entry.flow
        ? `Took ${flow} from config/funnels.toml as version ${entry.version}`
        : `Took the routing from config/funnels.toml as version ${entry.version}`;
    case 'rollback':
      return `Rolled ${flow} back to version ${entry.version}${entry.fromVersion === null ? '' : ` (from version ${entry.fromVersion})`}`;
    case 'routing':
      return `Published routing version ${entry.version}`;
    default:
      return `Published ${flow} version ${entry.version}${entry.fromVersion === null ? '' : ` (from version ${entry.fromVersion})`}`;
  }
}

/**
 * Every publish, rollback and routing change, newest first: who, when, what, and the fields it
 * changed (each with its words before and after, on request).
 */
export function FlowHistory({ labels, version }: { labels: Map<string, string>; version: number }) {
  const [entries, setEntries] = useState<HistoryEntry[] | null | undefined>(undefined);

  useEffect(() => {
    const controller = new AbortController();
    flowsApi
      .history(HISTORY_LIMIT, controller.signal)
      .then((answer) => setEntries(Array.isArray(answer?.entries) ? answer.entries : []))
      .catch(() => {
        if (!controller.signal.aborted) setEntries(null);
      });
    return () => controller.abort();
  }, [version]);

  const label = (field: string) => labels.get(field) ?? field;
  return (
    <Section id="flows-history-title" title="Publish history">
      {entries === undefined ? (
        <p className="ops-loaded">Reading the history...</p>
      ) : entries === null ? (
        <p className="form__error ops-message">{HISTORY_UNREADABLE}</p>
      ) : entries.length === 0 ? (
        <p className="ops-loaded">Nothing published yet.</p>
      ) : (
        <ol className="flows-history" aria-label={`The last ${entries.length} changes`}>
          {entries.map((entry, index) => {
            // An import holds every field (nothing was there before): the version itself says it.
            const changes = entry.kind === 'import' ? [] : (entry.changes ?? []);
            return (
              <li key={`${entry.at}-${index}`} className="flows-history__entry" data-testid="flows-history-entry">
                <p className="flows-history__what">{entryText(entry)}</p>
                <p className="flows-history__when">
                  {formatMoment(entry.at)} by {entry.by}
                </p>
                {changes.length > 0 && (
                  <details className="flows-history__changes">
                    <summary>Changed: {changes.map((change) => label(change.field)).join(', ')}</summary>
                    <ChangeList
                      changes={changes.map((change) => ({ ...change, label: label(change.field) }))}
                      beforeLabel="Before"
                      afterLabel="After"
                      headingLevel={4}
                    />
                  </details>
                )}
              </li>
            );
          })}
        </ol>
      )}
    </Section>
  );
}
