import { useEffect, useMemo, useRef, useState } from 'react';
import { Button } from '../../../components/Button';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { formatCount } from '../format';
import { countOf, formatMoment } from '../operations-format';
import { ChangeList } from './ChangeList';
import { FlowPreview } from './FlowPreview';
import { failureOf, flowsApi, type Flow, type FlowsOverview, type Problem } from './flows-api';
import { MessageLine, Section, type Message } from './parts';
import {
  changesFrom,
  charCount,
  fieldLabels,
  formOf,
  numberFields,
  problemsByField,
  sameForm,
  scriptOf,
  type FormValues,
} from './script-form';

export const SAVED = 'The draft is saved.';
export const SAVE_FAILED = 'The draft could not be saved. Please try again.';
export const NOTHING_PUBLISHED = 'Nothing was published: the draft has problems. Each is marked at its field.';
export const MOVED =
  'Someone published this flow while you were editing, so nothing was published. Reload to compare your draft with their version.';
export const NO_DRAFT =
  'There is no draft to publish any more: it was published or discarded elsewhere. Reload to see the flow as it is now.';
export const PUBLISH_FAILED = 'The flow could not be published. Please try again.';
export const DISCARD_FAILED = 'The draft could not be discarded. Please try again.';
export const CHECK_FIELDS = 'Check the fields marked above.';

/** What each text is for, beside its field. */
const FIELD_HINTS: Record<string, string> = {
  greeting: 'Opens the chat.',
  followUp: 'Answers the visitor’s first message when a script stands in for the AI.',
  troubleshooting: 'Answers the second message, asking what was tried, when a script stands in for the AI.',
  unclearFollowUp: 'Answers a first message that says nothing (“jjj”, “??”): it asks again.',
  unclearTroubleshooting: 'The same for the second message.',
  finalChat: 'The chat funnel’s last message, with the ‘Get started >>’ button.',
  finalRefundable: 'The refundable-fee funnel’s last message, with the ‘Get started >>’ button.',
  helpIntro: 'Above the help form’s paywall when the AI’s intro cannot be used. It cannot use {keyword}.',
};

const fieldId = (key: string) => `flows-field-${key}`;

/** The newest version number a flow has had; publishing makes the one after it. */
function newestVersion(flow: Flow): number {
  return flow.versions.reduce((newest, each) => Math.max(newest, each.version), flow.published ?? 0);
}

/**
 * The chosen flow's draft: every text with its character count and what it is for, the
 * placeholders explained beside them, the three numbers within their bounds; Save draft, Discard
 * draft and Publish (behind a confirmation). Below it, the changes from the published version and
 * the preview. The page mounts it afresh for another flow, and after a publish or a discard.
 */
export function FlowEditor({
  flow,
  overview,
  notice,
  onRefresh,
  onDone,
  onDirtyChange,
}: {
  flow: Flow;
  overview: FlowsOverview;
  /** What was just done (published, discarded, created): said at the top, with the focus. */
  notice: string | null;
  /** Reads the flows again: resolves with what the server has now (null when it failed). */
  onRefresh: (reset: boolean) => Promise<FlowsOverview | null>;
  /** Says what was done, above the editor that the page mounts afresh. */
  onDone: (text: string) => void;
  onDirtyChange: (dirty: boolean) => void;
}) {
  const { bounds } = overview;
  const numbers = useMemo(() => numberFields(bounds), [bounds]);
  const labels = useMemo(() => fieldLabels(overview.fields, bounds), [overview.fields, bounds]);
  const start = flow.draft?.script ?? flow.script;
  const [form, setForm] = useState<FormValues>(() => formOf(start));
  /** What the server holds: the saved draft, or the published version when there is none. */
  const [saved, setSaved] = useState<FormValues>(() => formOf(start));
  const [hasDraft, setHasDraft] = useState(flow.draft !== null);
  const [draftInfo, setDraftInfo] = useState(flow.draft ? { at: flow.draft.updatedAt, by: flow.draft.updatedBy } : null);
  const [basedOn, setBasedOn] = useState<number | null>(flow.draft ? flow.draft.basedOn : flow.published);
  /** The draft must be saved again before it is published (its base changed). */
  const [rebased, setRebased] = useState(false);
  const [problems, setProblems] = useState<Problem[]>(flow.draft?.problems ?? []);
  const [busy, setBusy] = useState<'save' | 'publish' | 'discard' | null>(null);
  const [message, setMessage] = useState<(Message & { reload?: boolean }) | null>(null);
  const [confirming, setConfirming] = useState<'publish' | 'discard' | null>(null);
  const [dialogError, setDialogError] = useState<string | null>(null);
  const messageRef = useRef<HTMLDivElement>(null);
  const focusMessage = useRef(false);
  const noticeRef = useRef<HTMLParagraphElement>(null);
  // Mounted afresh after a publish or a discard (the button pressed is gone): the notice has the focus.
  useEffect(() => {
    noticeRef.current?.focus();
  }, []);

  const dirty = !sameForm(form, saved);
  useEffect(() => onDirtyChange(dirty), [dirty, onDirtyChange]);
  useEffect(() => () => onDirtyChange(false), [onDirtyChange]);
  useEffect(() => {
    if (message && focusMessage.current) {
      focusMessage.current = false;
      messageRef.current?.focus();
    }
  }, [message]);

  const byField = problemsByField(problems);
  const changes = changesFrom(flow.script, form, labels);
  const next = newestVersion(flow) + 1;
  // The draft started from a version that is not the published one any more: publishing would fail.
  const behind = hasDraft && !rebased && basedOn !== flow.published;

  function say(said: Message & { reload?: boolean }, focus = false) {
    focusMessage.current = focus;
    setMessage(said);
  }

  function edit(key: keyof FormValues, value: string) {
    setForm((current) => ({ ...current, [key]: value }));
  }

  /**
   * Saves the fields as the draft (the server keeps it even with problems, and lists them):
   * `saved` is false when a number could not be read, and nothing was sent.
   */
  async function save(): Promise<{ saved: boolean; problems: Problem[] }> {
    const { script, problems: local } = scriptOf(form, numbers);
    if (!script) {
      setProblems(local);
      return { saved: false, problems: local };
    }
    const { draft } = await flowsApi.saveDraft(flow.name, script, basedOn);
    const found = draft.problems ?? [];
    setProblems(found);
    setSaved(formOf(draft.script ?? script));
    setHasDraft(true);
    setDraftInfo({ at: draft.updatedAt, by: draft.updatedBy });
    if (draft.basedOn !== undefined) setBasedOn(draft.basedOn);
    setRebased(false);
    void onRefresh(false);
    return { saved: true, problems: found };
  }

  async function saveDraft() {
    if (busy) return;
    setBusy('save');
    setMessage(null);
    try {
      const { saved: stored, problems: found } = await save();
      if (!stored) say({ ok: false, text: CHECK_FIELDS }, true);
      else if (found.length === 0) say({ ok: true, text: SAVED });
      else {
        say({
          ok: true,
          text: `The draft is saved, with ${countOf(found.length, 'problem')} to fix before it can be published.`,
        });
      }
    } catch {
      say({ ok: false, text: SAVE_FAILED }, true);
    } finally {
      setBusy(null);
    }
  }

  async function publish() {
    if (busy) return;
    setBusy('publish');
    setDialogError(null);
    try {
      if (dirty || !hasDraft || rebased) {
        const { saved: stored, problems: found } = await save();
        if (!stored || found.length > 0) {
          setConfirming(null);
          say({ ok: false, text: NOTHING_PUBLISHED }, true);
          return;
        }
      }
      const { version } = await flowsApi.publish(flow.name, basedOn);
      setConfirming(null);
      onDone(
        `Version ${version} of “${flow.name}” is published. New conversations get it within 2 seconds; those under way keep theirs.`,
      );
      await onRefresh(true);
    } catch (cause) {
      const failure = failureOf(cause);
      if (failure.status === 422) {
        setConfirming(null);
        if (failure.problems.length > 0) setProblems(failure.problems);
        say({ ok: false, text: NOTHING_PUBLISHED }, true);
      } else if (failure.status === 409) {
        setConfirming(null);
        say({ ok: false, text: MOVED, reload: true }, true);
      } else if (failure.status === 404) {
        setConfirming(null);
        say({ ok: false, text: NO_DRAFT, reload: true }, true);
      } else setDialogError(PUBLISH_FAILED);
    } finally {
      setBusy(null);
    }
  }

  async function discard() {
    if (busy) return;
    setBusy('discard');
    setDialogError(null);
    try {
      await flowsApi.discardDraft(flow.name);
      setConfirming(null);
      onDone(
        flow.published === null
          ? `The draft of “${flow.name}” is discarded.`
          : `The draft of “${flow.name}” is discarded: the fields show version ${flow.published} again.`,
      );
      await onRefresh(true);
    } catch {
      setDialogError(DISCARD_FAILED);
    } finally {
      setBusy(null);
    }
  }

  /** After someone else published: the flow as it is now, the draft compared with its version. */
  async function reload() {
    const fresh = await onRefresh(false);
    const now = fresh?.flows.find((each) => each.name === flow.name);
    if (!now) {
      say({ ok: false, text: 'The flows could not be read again. Please try again.', reload: true });
      return;
    }
    if (!now.draft && !dirty && hasDraft) {
      // Published or discarded elsewhere, and nothing of ours is unsaved: show it as it is.
      await onRefresh(true);
      return;
    }
    setBasedOn(now.published);
    setRebased(true);
    say({
      ok: true,
      text:
        now.published === null
          ? 'Reloaded.'
          : `Your draft is now compared with version ${now.published}, the one published. Check the changes below, then publish.`,
    });
  }

  const publishText =
    flow.published === null
      ? `“${flow.name}” gets its first version, 1, with its ${countOf(changes.length, 'field')}. Visitors get it once the routing sends them to it.`
      : `New conversations of “${flow.name}” get version ${next} within 2 seconds: ${countOf(changes.length, 'field')} ${changes.length === 1 ? 'changes' : 'change'} from version ${flow.published}. Conversations under way keep the version they started with.`;

  return (
    <>
      <Section id="flows-editor-title" title={`Edit “${flow.name}”`} className="flows-editor-section">
        {notice && (
          <p ref={noticeRef} tabIndex={-1} className="ops-done flows-notice" role="status" data-testid="flows-notice">
            {notice}
          </p>
        )}
        <p className="admin-section__note admin-section__note--first flows-state" data-testid="flows-editor-state">
          {flow.published === null ? 'Not published yet.' : `Version ${flow.published} is published.`}{' '}
          {hasDraft && draftInfo
            ? `Draft saved ${formatMoment(draftInfo.at)} by ${draftInfo.by}${basedOn === null ? '' : `, started from version ${basedOn}`}.`
            : `No draft: the fields show version ${flow.published ?? '–'}. Saving them makes a draft.`}
          {dirty && <strong className="flows-unsaved"> Unsaved changes.</strong>}
        </p>
        {behind && (
          <div className="flows-message flows-message--warning" data-testid="flows-behind">
            <p className="flows-message__text">
              This draft was started from version {basedOn ?? '–'}; version {flow.published ?? '–'} has been published
              since. Compare your draft with it before you publish.
            </p>
            <Button variant="secondary" onClick={() => void reload()}>
              Compare with version {flow.published ?? '–'}
            </Button>
          </div>
        )}
        <div className="flows-editor">
          <aside className="flows-placeholders" aria-labelledby="flows-placeholders-title">
            <h3 id="flows-placeholders-title" className="flows-placeholders__title">
              Placeholders
            </h3>
            <p className="flows-hint">Write them with their braces; the chat shows what each stands for.</p>
            <dl className="flows-placeholders__list">
              {overview.placeholders.map((placeholder) => (
                <div key={placeholder.name} className="flows-placeholders__item">
                  <dt>
                    <code>{placeholder.name}</code>
                  </dt>
                  <dd>{placeholder.meaning}</dd>
                </div>
              ))}
            </dl>
            <p className="flows-hint">
              Each text is 1 to {formatCount(bounds.textMaxChars)} characters. Any other word in braces is refused.
            </p>
          </aside>
          <div className="flows-fields">
            {overview.fields.map((field) => {
              const id = fieldId(field.key);
              const value = form[field.key] ?? '';
              const count = charCount(value);
              const found = byField.get(field.key);
              const described = [`${id}-hint`, `${id}-count`, found ? `${id}-problem` : null].filter(Boolean).join(' ');
              return (
                <div key={field.key} className="flows-field">
                  <div className="flows-field__head">
                    <label className="admin-field__label" htmlFor={id}>
                      {field.label}
                    </label>
                    <span
                      id={`${id}-count`}
                      className="flows-count"
                      data-over={count > bounds.textMaxChars ? 'true' : undefined}
                      data-testid={`flows-count-${field.key}`}
                    >
                      {formatCount(count)} / {formatCount(bounds.textMaxChars)}
                    </span>
                  </div>
                  <p id={`${id}-hint`} className="flows-hint">
                    {FIELD_HINTS[field.key] ?? ''}
                  </p>
                  <textarea
                    id={id}
                    className="admin-field__control flows-text"
                    rows={3}
                    value={value}
                    onChange={(event) => edit(field.key, event.target.value)}
                    aria-invalid={found ? true : undefined}
                    aria-describedby={described}
                  />
                  {found && (
                    <p id={`${id}-problem`} className="form__error flows-problem">
                      {found.join(' ')}
                    </p>
                  )}
                </div>
              );
            })}
            <div className="flows-numbers">
              {numbers.map((field) => {
                const id = fieldId(field.key);
                const found = byField.get(field.key);
                return (
                  <div key={field.key} className="admin-field flows-number">
                    <label className="admin-field__label" htmlFor={id}>
                      {field.label}
                    </label>
                    <input
                      id={id}
                      type="number"
                      inputMode="numeric"
                      min={field.min}
                      max={field.max}
                      step={1}
                      className="admin-field__control"
                      value={form[field.key]}
                      onChange={(event) => edit(field.key, event.target.value)}
                      aria-invalid={found ? true : undefined}
                      aria-describedby={[`${id}-hint`, found ? `${id}-problem` : null].filter(Boolean).join(' ')}
                    />
                    <p id={`${id}-hint`} className="flows-hint">
                      From {formatCount(field.min)} to {formatCount(field.max)} {field.unit}. {field.hint}
                    </p>
                    {found && (
                      <p id={`${id}-problem`} className="form__error flows-problem">
                        {found.join(' ')}
                      </p>
                    )}
                  </div>
                );
              })}
            </div>
          </div>
        </div>
        <div className="flows-actions">
          <Button onClick={() => void saveDraft()} disabled={busy !== null} aria-busy={busy === 'save'}>
            {busy === 'save' ? 'Saving...' : 'Save draft'}
          </Button>
          {hasDraft ? (
            <Button
              variant="secondary"
              disabled={busy !== null}
              onClick={() => {
                setDialogError(null);
                setConfirming('discard');
              }}
            >
              Discard draft
            </Button>
          ) : (
            dirty && (
              <Button
                variant="secondary"
                disabled={busy !== null}
                onClick={() => {
                  setForm(saved);
                  setProblems([]);
                  setMessage(null);
                }}
              >
                Undo changes
              </Button>
            )
          )}
          <Button
            variant="secondary"
            disabled={busy !== null || changes.length === 0}
            aria-describedby={changes.length === 0 ? 'flows-nothing-to-publish' : undefined}
            onClick={() => {
              setDialogError(null);
              setMessage(null);
              setConfirming('publish');
            }}
          >
            Publish draft
          </Button>
          {changes.length === 0 && (
            <p id="flows-nothing-to-publish" className="flows-hint flows-actions__note">
              Nothing to publish: the fields hold version {flow.published ?? '–'}.
            </p>
          )}
        </div>
        <MessageLine ref={messageRef} message={message} testId="flows-editor-message">
          {message?.reload && (
            <Button variant="secondary" onClick={() => void reload()}>
              Reload
            </Button>
          )}
        </MessageLine>
        {problems.length > 0 && (
          <div className="flows-problems" data-testid="flows-problems">
            <p className="flows-problems__title">{countOf(problems.length, 'problem')} to fix:</p>
            <ul>
              {problems.map((problem, index) => (
                <li key={`${problem.field}-${index}`}>
                  <a href={`#${fieldId(problem.field)}`}>{labels.get(problem.field) ?? problem.field}</a>:{' '}
                  {problem.message}
                </li>
              ))}
            </ul>
          </div>
        )}
      </Section>

      <Section id="flows-diff-title" title="Changes">
        {changes.length === 0 ? (
          <p className="admin-section__note admin-section__note--first" data-testid="flows-no-changes">
            The fields hold version {flow.published ?? '–'} as it is published: nothing changed.
          </p>
        ) : (
          <>
            <p className="admin-section__note admin-section__note--first">
              {flow.published === null
                ? `Nothing is published yet: all ${countOf(changes.length, 'field')} are new.`
                : `${countOf(changes.length, 'field')} ${changes.length === 1 ? 'differs' : 'differ'} from version ${flow.published}, as the fields hold them now. Words taken out are struck through; words put in are underlined.`}
            </p>
            <ChangeList
              changes={changes}
              beforeLabel={flow.published === null ? 'Before' : `Version ${flow.published}`}
              afterLabel="Draft"
            />
          </>
        )}
      </Section>

      <FlowPreview
        name={flow.name}
        usesKeyword={Object.values(form).some((value) => value.includes('{keyword}'))}
        scriptNow={() => scriptOf(form, numbers)}
        onProblems={setProblems}
      />

      {confirming === 'publish' && (
        <ConfirmDialog
          title={`Publish version ${next}`}
          confirmLabel={`Publish version ${next}`}
          busyLabel="Publishing..."
          cancelLabel="Keep editing"
          busy={busy === 'publish'}
          error={dialogError}
          onConfirm={() => void publish()}
          onCancel={() => setConfirming(null)}
        >
          {publishText}
        </ConfirmDialog>
      )}
      {confirming === 'discard' && (
        <ConfirmDialog
          title="Discard the draft"
          confirmLabel="Discard draft"
          busyLabel="Discarding..."
          cancelLabel="Keep the draft"
          busy={busy === 'discard'}
          error={dialogError}
          onConfirm={() => void discard()}
          onCancel={() => setConfirming(null)}
        >
          {flow.published === null
            ? `The draft of “${flow.name}” is deleted. Nothing was published of it, so the flow goes too.`
            : `The draft of “${flow.name}” is deleted, and the fields show version ${flow.published} again. Nothing that is published changes.`}
        </ConfirmDialog>
      )}
    </>
  );
}
