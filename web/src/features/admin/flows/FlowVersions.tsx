import { useEffect, useRef, useState } from 'react';
import { Button } from '../../../components/Button';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { formatMoment } from '../operations-format';
import { flowsApi, type Flow, type FlowVersion, type FlowsOverview } from './flows-api';
import { MessageLine, Section, type Message } from './parts';
import { fieldLabels, formOf, numberFields } from './script-form';

export const ROLLBACK_FAILED = 'The flow could not be rolled back. Please try again.';
export const VERSION_UNREADABLE = 'This version could not be read. Please try again.';

type Viewed = { version: number; script: FlowVersion | null; error: boolean };

/** A version's script, read-only: each field's label and text. */
function ScriptView({ version, overview }: { version: FlowVersion; overview: FlowsOverview }) {
  const labels = fieldLabels(overview.fields, overview.bounds);
  const values = formOf(version.script);
  const numbers = numberFields(overview.bounds);
  return (
    <dl className="flows-script" aria-label={`Version ${version.version} of ${version.name}`}>
      {[...overview.fields.map((field) => field.key), ...numbers.map((field) => field.key)].map((key) => (
        <div key={key} className="flows-script__item">
          <dt>{labels.get(key) ?? key}</dt>
          <dd>{values[key]}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * The flow's versions, newest first: each can be read, and an older one published again (roll
 * back, behind a confirmation). A conversation keeps the version it started with.
 */
export function FlowVersions({
  flow,
  overview,
  onRolledBack,
}: {
  flow: Flow;
  overview: FlowsOverview;
  /** Reads the flows again: the published version changed. */
  onRolledBack: () => Promise<void>;
}) {
  const [viewed, setViewed] = useState<Viewed | null>(null);
  const [rollingBack, setRollingBack] = useState<number | null>(null);
  const [busy, setBusy] = useState(false);
  const [dialogError, setDialogError] = useState<string | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  const messageRef = useRef<HTMLDivElement>(null);
  // The button pressed is gone (its version is the published one now): the message takes the focus.
  useEffect(() => {
    if (message) messageRef.current?.focus();
  }, [message]);

  async function view(version: number) {
    if (viewed?.version === version) {
      setViewed(null);
      return;
    }
    setViewed({ version, script: null, error: false });
    try {
      const script = await flowsApi.version(flow.name, version);
      setViewed((current) => (current?.version === version ? { version, script, error: false } : current));
    } catch {
      setViewed((current) => (current?.version === version ? { version, script: null, error: true } : current));
    }
  }

  async function rollBack(version: number) {
    if (busy) return;
    setBusy(true);
    setDialogError(null);
    try {
      const { published } = await flowsApi.rollback(flow.name, version);
      setRollingBack(null);
      await onRolledBack();
      setMessage({
        ok: true,
        text: `“${flow.name}” is back to version ${published ?? version}. New conversations get it within 2 seconds; those under way keep theirs.`,
      });
    } catch {
      setDialogError(ROLLBACK_FAILED);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Section id="flows-versions-title" title={`Versions of “${flow.name}”`}>
      <MessageLine ref={messageRef} message={message} testId="flows-versions-message" />
      {flow.versions.length === 0 ? (
        <p className="admin-section__note admin-section__note--first">Not published yet: no versions.</p>
      ) : (
        <div className="admin-table__frame">
          <div className="admin-table__scroll" role="region" aria-label="Versions table" tabIndex={0}>
            <table className="admin-table flows-versions">
              <caption className="admin-table__caption">
                Every version stays as it was published. New conversations get the published one.
              </caption>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Published</th>
                  <th scope="col">By</th>
                  <th scope="col">What you can do</th>
                </tr>
              </thead>
              <tbody>
                {flow.versions.map((each) => {
                  const current = each.version === flow.published;
                  const open = viewed?.version === each.version;
                  return (
                    <tr key={each.version} aria-current={current ? 'true' : undefined}>
                      <th scope="row">
                        Version {each.version}
                        {current && <span className="flows-tag">Published</span>}
                      </th>
                      <td>{formatMoment(each.publishedAt)}</td>
                      <td className="flows-wrap">{each.publishedBy}</td>
                      <td>
                        <div className="flows-row-actions">
                          <Button variant="secondary" aria-expanded={open} onClick={() => void view(each.version)}>
                            {open ? `Hide version ${each.version}` : `View version ${each.version}`}
                          </Button>
                          {!current && (
                            <Button
                              variant="secondary"
                              disabled={busy}
                              onClick={() => {
                                setDialogError(null);
                                setMessage(null);
                                setRollingBack(each.version);
                              }}
                            >
                              Roll back to version {each.version}
                            </Button>
                          )}
                        </div>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </div>
      )}
      {viewed && (
        <div className="flows-viewed" data-testid="flows-version-view">
          <h3 className="flows-subtitle">Version {viewed.version}</h3>
          {viewed.error ? (
            <p className="form__error">{VERSION_UNREADABLE}</p>
          ) : viewed.script ? (
            <ScriptView version={viewed.script} overview={overview} />
          ) : (
            <p className="admin-loading" role="status">
              <span className="spinner" aria-hidden="true" /> Reading version {viewed.version}...
            </p>
          )}
        </div>
      )}
      {rollingBack !== null && (
        <ConfirmDialog
          title={`Roll back to version ${rollingBack}`}
          confirmLabel={`Roll back to version ${rollingBack}`}
          busyLabel="Rolling back..."
          cancelLabel={`Keep version ${flow.published ?? '–'}`}
          busy={busy}
          error={dialogError}
          onConfirm={() => void rollBack(rollingBack)}
          onCancel={() => setRollingBack(null)}
        >
          New conversations of “{flow.name}” get version {rollingBack} again within 2 seconds, instead of version{' '}
          {flow.published ?? '–'}. Conversations under way keep the version they started with. A draft, if there is
          one, stays as it is.
        </ConfirmDialog>
      )}
    </Section>
  );
}
