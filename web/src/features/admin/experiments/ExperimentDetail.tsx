import { useEffect, useRef, useState } from 'react';
import { Button } from '../../../components/Button';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { formatDay, formatMoment } from '../operations-format';
import { LoadFailed, Section } from '../sections';
import { ExperimentAnalysis } from './ExperimentAnalysis';
import { ExperimentEditor } from './ExperimentEditor';
import {
  armLetter,
  experimentsApi,
  failureOf,
  FUNNEL_NAMES,
  type Arm,
  type Experiment,
  type ExperimentDetail as Detail,
  type FlowChoice,
  type HistoryRecord,
} from './experiments-api';
import {
  formatLoss,
  formatPercent,
  formatShare,
  METRIC_NAMES,
  plural,
  scopeSummary,
  STATUS_NAMES,
} from './experiments-format';

/** How often a running experiment's figures are read again. */
export const POLL_MS = 5000;
/** Never two reads closer than this, whatever asks for them. */
export const MIN_GAP_MS = 600;

export const DETAIL_FAILED = 'The experiment could not be loaded. Please try again.';
export const REFRESH_FAILED = 'The figures could not be refreshed; trying again.';
export const NOT_FOUND = 'There is no such experiment.';

type Step = 'start' | 'pause' | 'stop' | 'archive' | 'promote';
type Asked = { step: Step; arm?: string };

const DONE: Record<Step, string> = {
  start: 'Started: new visitors of its scope are split between the arms.',
  pause: 'Paused: no new visitors are put in an arm until you resume it.',
  stop: 'Stopped. Nothing was promoted.',
  archive: 'Archived.',
  promote: 'Promoted.',
};

/** A status as a badge. */
export function StatusBadge({ status }: { status: Experiment['status'] }) {
  return (
    <span className={`exp-status exp-status--${status}`} data-testid="exp-status">
      {STATUS_NAMES[status] ?? status}
    </span>
  );
}

function armFlow(arm: Arm): string {
  return arm.flow ? `${arm.flow.name} v${arm.flow.version}` : 'the routing’s choice';
}

function armOffer(arm: Arm, experiment: Experiment): string {
  return arm.offer && arm.offer !== experiment.scope.funnel ? FUNNEL_NAMES[arm.offer] : 'same funnel';
}

/** What a history record says: "Started", "Promoted arm B". */
export function recordText(record: HistoryRecord): string {
  const arm = record.arm ? ` arm ${record.arm.toUpperCase()}` : '';
  const words: Record<HistoryRecord['kind'], string> = {
    created: 'Created',
    edited: 'Edited',
    started: 'Started',
    paused: 'Paused',
    resumed: 'Resumed',
    stopped: 'Stopped',
    promoted: 'Promoted',
    archived: 'Archived',
  };
  return `${words[record.kind] ?? record.kind}${arm}`;
}

/** The definition, read back in words. */
function Summary({ experiment }: { experiment: Experiment }) {
  const { goal, guardrails, rule } = experiment;
  const total = experiment.arms.reduce((sum, arm) => sum + arm.weight, 0);
  const limits = [
    guardrails.maxRefundRate === null ? null : `refund rate at most ${formatPercent(guardrails.maxRefundRate)}`,
    guardrails.maxEarlyLeaveRate === null ? null : `early-leave rate at most ${formatPercent(guardrails.maxEarlyLeaveRate)}`,
  ].filter(Boolean);
  return (
    <dl className="exp-summary">
      <div className="exp-summary__item">
        <dt>Who takes part</dt>
        <dd>{scopeSummary(experiment.scope)}</dd>
      </div>
      <div className="exp-summary__item">
        <dt>Arms</dt>
        <dd>
          <ul className="exp-summary__arms">
            {experiment.arms.map((arm, index) => (
              <li key={arm.key ?? index}>
                <strong>
                  {armLetter(index)} · {arm.name}
                </strong>
                {index === 0 && ' (control)'}: {armFlow(arm)}, {armOffer(arm, experiment)},{' '}
                {total > 0 ? formatShare(arm.weight / total) : '–'} of visitors
              </li>
            ))}
          </ul>
        </dd>
      </div>
      <div className="exp-summary__item">
        <dt>Goal</dt>
        <dd>
          {METRIC_NAMES[goal.metric]} within {plural(goal.days, 'day')}
        </dd>
      </div>
      <div className="exp-summary__item">
        <dt>Guardrails</dt>
        <dd>{limits.length === 0 ? 'None' : limits.join('; ')}</dd>
      </div>
      <div className="exp-summary__item">
        <dt>A winner when</dt>
        <dd>
          at least {plural(rule.minExposures, 'visitor')} per arm and {plural(rule.minDays, 'day')}, a{' '}
          {formatPercent(rule.chance)} chance to beat the control (A), an expected loss of at most{' '}
          {formatLoss(goal.metric, rule.maxLoss)}. {experiment.autoPromote ? 'Promoted automatically.' : 'You promote it.'}
        </dd>
      </div>
      <div className="exp-summary__item">
        <dt>Dates</dt>
        <dd>
          Created {formatDay(experiment.createdAt)} by {experiment.createdBy}
          {experiment.startedAt && <>; started {formatMoment(experiment.startedAt)}</>}
          {experiment.endedAt && <>; ended {formatMoment(experiment.endedAt)}</>}
          {experiment.promotedAt && (
            <>
              ; arm {experiment.winner?.toUpperCase()} promoted {formatMoment(experiment.promotedAt)} by{' '}
              {experiment.promotedBy}
            </>
          )}
        </dd>
      </div>
    </dl>
  );
}

/**
 * One experiment: what it is, how it stands (read again every 5 seconds while it runs), what can
 * be done with it now (each step behind a confirmation), and what was done. A draft is edited here.
 */
export function ExperimentDetail({
  id,
  flows,
  editing,
  onEdit,
  onChanged,
}: {
  id: string;
  flows: FlowChoice[];
  /** The draft's editor is open (the address says so). */
  editing: boolean;
  onEdit: (open: boolean) => void;
  /** The experiment changed: the list is read again. */
  onChanged: () => void;
}) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [reads, setReads] = useState(0);
  const [asked, setAsked] = useState<Asked | null>(null);
  const [busy, setBusy] = useState(false);
  const [dialogError, setDialogError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const lastRead = useRef(0);
  const status = useRef<string | null>(null);
  const noticeRef = useRef<HTMLParagraphElement>(null);

  // Read now (or as soon as 600 ms have passed since the last read), then every 5 s while running.
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = (ms: number) => {
      const wait = Math.max(ms, lastRead.current + MIN_GAP_MS - Date.now(), 0);
      timer = setTimeout(() => void read(), wait);
    };
    async function read() {
      // A hidden tab does not read: it looks again later.
      if (typeof document !== 'undefined' && document.hidden && status.current === 'running') {
        schedule(POLL_MS);
        return;
      }
      lastRead.current = Date.now();
      try {
        const answer = await experimentsApi.get(id, controller.signal);
        if (controller.signal.aborted) return;
        status.current = answer.experiment.status;
        setDetail(answer);
        setError(null);
        setMissing(false);
      } catch (cause) {
        if (controller.signal.aborted) return;
        const failure = failureOf(cause);
        if (failure.status === 404) {
          setMissing(true);
          return;
        }
        setError(status.current === null ? DETAIL_FAILED : REFRESH_FAILED);
      }
      if (status.current === 'running') schedule(POLL_MS);
    }
    schedule(0);
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [id, reads]);

  useEffect(() => {
    if (notice) noticeRef.current?.focus();
  }, [notice]);

  if (missing) {
    return (
      <Section id="exp-detail-title" title="Experiment">
        <p className="form__error">{NOT_FOUND}</p>
      </Section>
    );
  }
  if (!detail) {
    return error ? (
      <Section id="exp-detail-title" title="Experiment">
        <LoadFailed error={error} onRetry={() => setReads((current) => current + 1)} />
      </Section>
    ) : (
      <p className="admin-loading" role="status">
        <span className="spinner" aria-hidden="true" /> Loading the experiment...
      </p>
    );
  }

  const { experiment, analysis } = detail;
  const history = [...(detail.history ?? [])].sort((a, b) => String(b.at).localeCompare(String(a.at)));
  const state = experiment.status;

  if (editing && state === 'draft') {
    return (
      <ExperimentEditor
        experiment={experiment}
        flows={flows}
        onSaved={(saved) => {
          setDetail((current) => (current ? { ...current, experiment: saved } : current));
          setNotice(`The draft “${saved.name}” is saved.`);
          onEdit(false);
          onChanged();
          setReads((current) => current + 1);
        }}
        onCancel={() => onEdit(false)}
      />
    );
  }

  const promotable = analysis?.promotable ?? null;
  const canPromote = (state === 'running' || state === 'stopped' || state === 'paused') && !experiment.promotedAt;
  const armName = (key: string | undefined) => {
    const index = experiment.arms.findIndex((arm, at) => (arm.key ?? armLetter(at).toLowerCase()) === key);
    const arm = experiment.arms[index];
    return arm ? `arm ${armLetter(index)} (${arm.name})` : `arm ${key?.toUpperCase()}`;
  };

  /**
   * What the operator is told first when promoting an arm the rule does not offer (null for the arm
   * it does): "The rule has not picked a winner yet (Collecting: …): promoting B now publishes it
   * on today's figures."
   */
  function notPickedWarning(key: string): string | null {
    if (key === promotable) return null;
    const index = experiment.arms.findIndex((arm, at) => (arm.key ?? armLetter(at).toLowerCase()) === key);
    const letter = index >= 0 ? armLetter(index) : key.toUpperCase();
    const sentence = (analysis?.status ?? '').trim().replace(/[.!]+$/, '');
    const why = sentence ? ` (${sentence})` : '';
    const decision = analysis?.decision;
    const picked =
      promotable ?? (decision?.state === 'winner' ? (analysis?.arms[decision.arm]?.key ?? null) : null);
    const stands =
      picked === null
        ? `The rule has not picked a winner yet${why}`
        : picked === key
          ? `The rule does not offer this arm for promotion${why}`
          : `The rule picks ${armName(picked)}, not this arm${why}`;
    return `${stands}: promoting ${letter} now publishes it on today’s figures.`;
  }

  function ask(step: Step, arm?: string) {
    setDialogError(null);
    setNotice(null);
    setAsked({ step, arm });
  }

  async function act() {
    if (!asked || busy) return;
    setBusy(true);
    setDialogError(null);
    try {
      const changed =
        asked.step === 'promote'
          ? await experimentsApi.promote(experiment.id, asked.arm ?? '')
          : await experimentsApi.act(experiment.id, asked.step);
      setDetail((current) => (current ? { ...current, experiment: { ...current.experiment, ...changed } } : current));
      status.current = changed.status ?? status.current;
      setNotice(
        asked.step === 'promote'
          ? `Promoted ${armName(asked.arm)}: its flow version and offer are now routed for this experiment’s visitors.`
          : asked.step === 'start' && state === 'paused'
            ? 'Resumed: new visitors are split between the arms again.'
            : DONE[asked.step],
      );
      setAsked(null);
      onChanged();
      setReads((current) => current + 1);
    } catch (cause) {
      const failure = failureOf(cause);
      const problems = failure.problems.map((problem) => problem.message);
      if (problems.length > 0) setDialogError(problems.join(' '));
      else if (failure.status === 409 || failure.status === 422) setDialogError(failure.message || 'This could not be done now.');
      else if (failure.status === 404) setDialogError(NOT_FOUND);
      else setDialogError('This could not be done. Please try again.');
    } finally {
      setBusy(false);
    }
  }

  const name = `“${experiment.name}”`;
  const dialog: Record<Step, { title: string; confirm: string; busyLabel: string; text: string }> = {
    start:
      state === 'paused'
        ? {
            title: `Resume ${name}`,
            confirm: 'Resume',
            busyLabel: 'Resuming...',
            text: 'New visitors of its scope are split between the arms again, as before the pause.',
          }
        : {
            title: `Start ${name}`,
            confirm: 'Start',
            busyLabel: 'Starting...',
            text: `From now on the visitors of ${scopeSummary(experiment.scope)} are split between the arms (${experiment.arms
              .map((arm, index) => `${armLetter(index)} ${arm.weight}`)
              .join(', ')} by weight). A started experiment can no longer be edited.`,
          },
    pause: {
      title: `Pause ${name}`,
      confirm: 'Pause',
      busyLabel: 'Pausing...',
      text: 'No new visitors are put in an arm until you resume it. The figures so far are kept.',
    },
    stop: {
      title: `Stop ${name}`,
      confirm: 'Stop',
      busyLabel: 'Stopping...',
      text: 'The experiment ends for good: no more visitors are put in an arm, and it cannot be started again. Nothing is promoted; you can still promote an arm afterwards.',
    },
    archive: {
      title: `Archive ${name}`,
      confirm: 'Archive',
      busyLabel: 'Archiving...',
      text: 'It moves to the end of the list and can no longer be started or changed.',
    },
    promote: {
      title: `Promote ${armName(asked?.arm)}`,
      confirm: asked?.arm && asked.arm !== promotable ? 'Promote anyway' : 'Promote',
      busyLabel: 'Promoting...',
      text: (() => {
        const arm = experiment.arms.find((each, at) => (each.key ?? armLetter(at).toLowerCase()) === asked?.arm);
        const flow = arm?.flow ? `Its flow version ${armFlow(arm)} is published and routed` : 'The routing’s choice of flow stays';
        const offer = arm?.offer
          ? `and its offer, ${FUNNEL_NAMES[arm.offer]}, is routed for the scope’s campaigns`
          : 'and its visitors keep their funnel';
        const what = `${flow} for ${scopeSummary(experiment.scope)}, ${offer}. The experiment stops${state === 'stopped' ? '' : ' now'}, and this cannot be undone here.`;
        const warning = asked?.arm ? notPickedWarning(asked.arm) : null;
        return warning ? `${warning} ${what}` : what;
      })(),
    },
  };
  const shown = asked ? dialog[asked.step] : null;

  return (
    <>
      <Section
        id="exp-detail-title"
        title={
          <>
            {experiment.name} <StatusBadge status={state} />
          </>
        }
      >
        {notice && (
          <p ref={noticeRef} tabIndex={-1} className="ops-done flows-notice" role="status">
            {notice}
          </p>
        )}
        {error && <p className="form__error ops-message">{error}</p>}
        {analysis && state !== 'draft' && (
          <p className="exp-headline" data-testid="exp-headline">
            {analysis.status}
          </p>
        )}
        <div className="exp-actions" data-testid="exp-actions">
          {state === 'draft' && (
            <Button variant="secondary" onClick={() => onEdit(true)}>
              Edit
            </Button>
          )}
          {(state === 'draft' || state === 'paused') && (
            <Button onClick={() => ask('start')}>{state === 'paused' ? 'Resume' : 'Start'}</Button>
          )}
          {state === 'running' && (
            <Button variant="secondary" onClick={() => ask('pause')}>
              Pause
            </Button>
          )}
          {(state === 'running' || state === 'paused') && (
            <Button variant="secondary" onClick={() => ask('stop')}>
              Stop
            </Button>
          )}
          {canPromote && promotable && (
            <Button onClick={() => ask('promote', promotable)}>Promote {armName(promotable)}</Button>
          )}
          {canPromote && (
            <details className="exp-menu">
              <summary className="btn btn--secondary exp-menu__button">Promote an arm</summary>
              <div className="exp-menu__list">
                {experiment.arms.map((arm, index) => {
                  const key = arm.key ?? armLetter(index).toLowerCase();
                  return (
                    <Button key={key} variant="secondary" className="exp-small" onClick={() => ask('promote', key)}>
                      Promote {armLetter(index)} ({arm.name})
                    </Button>
                  );
                })}
              </div>
            </details>
          )}
          {(state === 'draft' || state === 'stopped') && (
            <Button variant="secondary" onClick={() => ask('archive')}>
              Archive
            </Button>
          )}
        </div>
        <Summary experiment={experiment} />
      </Section>

      {state !== 'draft' && analysis && (
        <Section id="exp-results-title" title="Results">
          {/* The rule's sentence and its pick's button are at the top. */}
          <ExperimentAnalysis experiment={experiment} analysis={analysis} verdict={false} />
          {state === 'running' && <p className="flows-hint">Read again every 5 seconds while it runs.</p>}
        </Section>
      )}

      <Section id="exp-history-title" title="History">
        {history.length === 0 ? (
          <p className="ops-loaded">Nothing yet.</p>
        ) : (
          <ol className="flows-history" aria-label="What was done, newest first">
            {history.map((record, index) => (
              <li key={`${record.at}-${index}`} className="flows-history__entry" data-testid="exp-history-entry">
                <p className="flows-history__what">{recordText(record)}</p>
                <p className="flows-history__when">
                  {formatMoment(record.at)} by {record.by}
                </p>
                {record.note && <p className="flows-hint">{record.note}</p>}
              </li>
            ))}
          </ol>
        )}
      </Section>

      {asked && shown && (
        <ConfirmDialog
          title={shown.title}
          confirmLabel={shown.confirm}
          busyLabel={shown.busyLabel}
          cancelLabel="Cancel"
          busy={busy}
          error={dialogError}
          onConfirm={() => void act()}
          onCancel={() => setAsked(null)}
        >
          {shown.text}
        </ConfirmDialog>
      )}
    </>
  );
}
