import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { Button } from '../../../components/Button';
import { MessageLine, Section, type Message } from '../flows/parts';
import {
  armLetter,
  experimentsApi,
  failureOf,
  FUNNEL_NAMES,
  FUNNELS,
  type Experiment,
  type FlowChoice,
  type Funnel,
  type Metric,
  type Problem,
} from './experiments-api';
import { formatShare, METRIC_NAMES } from './experiments-format';
import {
  DEFAULT_DEFINITION,
  DEFAULT_LOSS,
  definitionOf,
  fieldKeys,
  flowOptions,
  formOf,
  MAX_ARMS,
  MIN_ARMS,
  newArm,
  placeProblems,
  shares,
  type ArmForm,
  type FormValues,
} from './experiment-form';

export const NOTHING_SAVED = 'Nothing was saved: the experiment has problems. Each is marked at its field.';
export const NOTHING_SAVED_HERE = 'Nothing was saved: the experiment has these problems.';
export const NOT_DRAFT = 'Nothing was saved: this experiment is no longer a draft, so it cannot be edited.';
export const SAVE_FAILED = 'The experiment could not be saved. Please try again.';

/** A field's problems, under it. */
function FieldProblems({ id, messages }: { id: string; messages: string[] | undefined }) {
  if (!messages || messages.length === 0) return null;
  return (
    <p id={id} className="form__error flows-problem">
      {messages.join(' ')}
    </p>
  );
}

/** The attributes that tie a control to its hint and its problems. */
function described(id: string, messages: string[] | undefined, hint = false) {
  const ids = [hint ? `${id}-hint` : null, messages?.length ? `${id}-problem` : null].filter(Boolean);
  return {
    'aria-invalid': messages?.length ? true : undefined,
    'aria-describedby': ids.length > 0 ? ids.join(' ') : undefined,
  } as const;
}

/** A labelled field: its label, its control, its hint and its problems. */
function Field({
  id,
  label,
  hint,
  messages,
  className,
  children,
}: {
  id: string;
  label: string;
  hint?: ReactNode;
  messages: string[] | undefined;
  className?: string;
  children: ReactNode;
}) {
  return (
    <div className={['admin-field', className].filter(Boolean).join(' ')}>
      <label className="admin-field__label" htmlFor={id}>
        {label}
      </label>
      {children}
      {hint && (
        <p id={`${id}-hint`} className="flows-hint">
          {hint}
        </p>
      )}
      <FieldProblems id={`${id}-problem`} messages={messages} />
    </div>
  );
}

/** A number kept as typed: a labelled text input that brings up the number keyboard on a phone. */
function NumberField({
  id,
  label,
  hint,
  messages,
  className,
  decimal = false,
  value,
  onChange,
}: {
  id: string;
  label: string;
  hint?: ReactNode;
  messages: string[] | undefined;
  className?: string;
  /** A fraction is allowed (the keyboard with a decimal point). */
  decimal?: boolean;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <Field id={id} label={label} hint={hint} messages={messages} className={className}>
      <input
        id={id}
        className="admin-field__control"
        value={value}
        inputMode={decimal ? 'decimal' : 'numeric'}
        autoComplete="off"
        onChange={(event) => onChange(event.target.value)}
        {...described(id, messages, Boolean(hint))}
      />
    </Field>
  );
}

/**
 * A new experiment, or a draft's changes: who takes part (the funnel, and its campaigns and
 * keywords), two to four arms (A is the control), the goal, the guardrails and when to stop.
 * Saved as a draft; the server's problems are shown at their fields.
 */
export function ExperimentEditor({
  experiment,
  flows,
  onSaved,
  onCancel,
}: {
  /** The draft edited; null for a new experiment. */
  experiment: Experiment | null;
  flows: FlowChoice[];
  onSaved: (experiment: Experiment) => void;
  onCancel: () => void;
}) {
  const [form, setForm] = useState<FormValues>(() => formOf(experiment ?? DEFAULT_DEFINITION));
  const [problems, setProblems] = useState<Problem[]>([]);
  const [message, setMessage] = useState<Message | null>(null);
  const [busy, setBusy] = useState(false);
  const messageRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (message && !message.ok) messageRef.current?.focus();
  }, [message]);

  const { at, rest } = placeProblems(problems, fieldKeys(form.arms.length));
  const armShares = shares(form.arms);
  const lossUnit = form.metric === 'trial_paid' ? 'percentage points' : 'dollars per visitor';

  function set<K extends keyof FormValues>(key: K, value: FormValues[K]) {
    setForm((current) => ({ ...current, [key]: value }));
  }

  function setArm(id: number, part: Partial<ArmForm>) {
    setForm((current) => ({ ...current, arms: current.arms.map((arm) => (arm.id === id ? { ...arm, ...part } : arm)) }));
  }

  /** The problems name arms by position: after an arm comes or goes they would point at another. */
  function changeArms(arms: ArmForm[]) {
    setForm((current) => ({ ...current, arms }));
    setProblems((current) => current.filter((problem) => !problem.field.startsWith('arms')));
  }

  function setMetric(metric: Metric) {
    setForm((current) => ({
      ...current,
      metric,
      // The loss is in the goal's unit: the other unit's default would mean something else.
      maxLoss: current.maxLoss.trim() === DEFAULT_LOSS[current.metric] ? DEFAULT_LOSS[metric] : current.maxLoss,
    }));
  }

  async function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    const { definition, problems: found } = definitionOf(form);
    if (!definition) {
      setProblems(found);
      setMessage({ ok: false, text: NOTHING_SAVED });
      return;
    }
    setBusy(true);
    setMessage(null);
    try {
      const saved = experiment
        ? await experimentsApi.update(experiment.id, definition)
        : await experimentsApi.create(definition);
      setProblems([]);
      onSaved(saved);
    } catch (cause) {
      const failure = failureOf(cause);
      if (failure.status === 422) {
        setProblems(failure.problems);
        const atFields = failure.problems.length - placeProblems(failure.problems, fieldKeys(form.arms.length)).rest.length;
        setMessage({
          ok: false,
          text: atFields > 0 ? NOTHING_SAVED : failure.problems.length > 0 ? NOTHING_SAVED_HERE : failure.message || SAVE_FAILED,
        });
      } else if (failure.status === 409 && failure.code === 'not_draft') {
        setMessage({ ok: false, text: NOT_DRAFT });
      } else setMessage({ ok: false, text: SAVE_FAILED });
    } finally {
      setBusy(false);
    }
  }

  const title = experiment ? `Edit “${experiment.name}”` : 'New experiment';
  const groupProblems = (key: string) => <FieldProblems id={`exp-${key.replace(/\./g, '-')}-problem`} messages={at.get(key)} />;

  return (
    <Section id="exp-editor-title" title={title}>
      <form className="exp-editor" onSubmit={(event) => void save(event)} noValidate aria-label={title}>
        <p className="admin-section__note admin-section__note--first">
          Saved as a draft: nothing changes for visitors until you start it. A draft can be edited; a started
          experiment cannot.
        </p>
        <MessageLine ref={messageRef} message={message} testId="exp-editor-message">
          {rest.length > 0 && (
            <ul className="exp-problems" data-testid="exp-editor-rest">
              {rest.map((problem, index) => (
                <li key={`${problem.field}-${index}`}>{problem.message}</li>
              ))}
            </ul>
          )}
        </MessageLine>

        <Field id="exp-name" label="Experiment name" messages={at.get('name')} className="exp-field--wide">
          <input
            id="exp-name"
            className="admin-field__control"
            value={form.name}
            maxLength={60}
            autoComplete="off"
            onChange={(event) => set('name', event.target.value)}
            {...described('exp-name', at.get('name'))}
          />
        </Field>

        <fieldset className="exp-group">
          <legend className="flows-subtitle">Who takes part</legend>
          {groupProblems('scope')}
          <div className="admin-filters">
            <Field id="exp-funnel" label="Funnel" messages={at.get('scope.funnel')}>
              <select
                id="exp-funnel"
                className="admin-field__control"
                value={form.funnel}
                onChange={(event) => set('funnel', event.target.value as Funnel)}
                {...described('exp-funnel', at.get('scope.funnel'))}
              >
                {FUNNELS.map((funnel) => (
                  <option key={funnel} value={funnel}>
                    {FUNNEL_NAMES[funnel]}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          <div className="admin-filters exp-lists">
            <Field
              id="exp-campaigns"
              label="Campaign ids"
              hint="Comma or newline separated, as the ad’s address gives them (campaignid)."
              messages={at.get('scope.campaigns')}
            >
              <textarea
                id="exp-campaigns"
                className="admin-field__control exp-textarea"
                value={form.campaigns}
                rows={2}
                spellCheck={false}
                onChange={(event) => set('campaigns', event.target.value)}
                {...described('exp-campaigns', at.get('scope.campaigns'), true)}
              />
            </Field>
            <Field
              id="exp-keywords"
              label="Keywords"
              hint="Comma or newline separated; a keyword matches in any case. Leave both empty for every visitor of the funnel."
              messages={at.get('scope.keywords')}
            >
              <textarea
                id="exp-keywords"
                className="admin-field__control exp-textarea"
                value={form.keywords}
                rows={2}
                onChange={(event) => set('keywords', event.target.value)}
                {...described('exp-keywords', at.get('scope.keywords'), true)}
              />
            </Field>
          </div>
        </fieldset>

        <fieldset className="exp-group">
          <legend className="flows-subtitle">Arms</legend>
          <p className="flows-hint">
            Each visitor is put in one arm by chance, in the share its weight sets. Arm A is the control: the others are
            compared with it. An arm’s offer of another funnel needs campaign ids above: a winning offer is routed by
            campaign.
          </p>
          {groupProblems('arms')}
          {form.arms.map((arm, index) => {
            const letter = armLetter(index);
            const base = `exp-arm-${arm.id}`;
            const key = `arms.${index}`;
            const share = armShares[index];
            return (
              <div
                key={arm.id}
                className="exp-arm"
                role="group"
                aria-label={`Arm ${letter}${index === 0 ? ' (control)' : ''}`}
                data-testid="exp-arm"
              >
                <div className="exp-arm__head">
                  <h3 className="exp-arm__title">
                    Arm {letter}
                    {index === 0 && (
                      <>
                        {' '}
                        <span className="flows-tag">Control</span>
                      </>
                    )}
                  </h3>
                  {index > 0 && form.arms.length > MIN_ARMS && (
                    <Button
                      variant="secondary"
                      className="exp-small"
                      aria-label={`Remove arm ${letter}`}
                      onClick={() => changeArms(form.arms.filter((other) => other.id !== arm.id))}
                    >
                      Remove
                    </Button>
                  )}
                </div>
                {groupProblems(key)}
                <div className="admin-filters">
                  <Field id={`${base}-name`} label="Name" messages={at.get(`${key}.name`)}>
                    <input
                      id={`${base}-name`}
                      className="admin-field__control"
                      value={arm.name}
                      maxLength={60}
                      autoComplete="off"
                      onChange={(event) => setArm(arm.id, { name: event.target.value })}
                      {...described(`${base}-name`, at.get(`${key}.name`))}
                    />
                  </Field>
                  <Field id={`${base}-flow`} label="Flow version" messages={at.get(`${key}.flow`)}>
                    <select
                      id={`${base}-flow`}
                      className="admin-field__control"
                      value={arm.flow}
                      onChange={(event) => setArm(arm.id, { flow: event.target.value })}
                      {...described(`${base}-flow`, at.get(`${key}.flow`))}
                    >
                      {flowOptions(flows, arm.flow).map((option) => (
                        <option key={option.value} value={option.value}>
                          {option.label}
                        </option>
                      ))}
                    </select>
                  </Field>
                  <Field id={`${base}-offer`} label="Offer" messages={at.get(`${key}.offer`)}>
                    <select
                      id={`${base}-offer`}
                      className="admin-field__control"
                      value={arm.offer}
                      onChange={(event) => setArm(arm.id, { offer: event.target.value as Funnel | '' })}
                      {...described(`${base}-offer`, at.get(`${key}.offer`))}
                    >
                      <option value="">Same funnel</option>
                      {FUNNELS.map((funnel) => (
                        <option key={funnel} value={funnel}>
                          {FUNNEL_NAMES[funnel]}
                        </option>
                      ))}
                    </select>
                  </Field>
                  <NumberField
                    id={`${base}-weight`}
                    label="Weight"
                    hint={share === null ? 'From 1 to 100.' : `${formatShare(share)} of visitors.`}
                    messages={at.get(`${key}.weight`)}
                    className="exp-field--narrow"
                    value={arm.weight}
                    onChange={(weight) => setArm(arm.id, { weight })}
                  />
                </div>
              </div>
            );
          })}
          {form.arms.length < MAX_ARMS && (
            <Button variant="secondary" onClick={() => changeArms([...form.arms, newArm(form.arms.length)])}>
              Add an arm
            </Button>
          )}
        </fieldset>

        <fieldset className="exp-group">
          <legend className="flows-subtitle">Goal</legend>
          {groupProblems('goal')}
          <div className="admin-filters">
            <Field id="exp-metric" label="Metric" messages={at.get('goal.metric')}>
              <select
                id="exp-metric"
                className="admin-field__control"
                value={form.metric}
                onChange={(event) => setMetric(event.target.value as Metric)}
                {...described('exp-metric', at.get('goal.metric'))}
              >
                {(Object.keys(METRIC_NAMES) as Metric[]).map((metric) => (
                  <option key={metric} value={metric}>
                    {METRIC_NAMES[metric]}
                  </option>
                ))}
              </select>
            </Field>
            <NumberField
              id="exp-days"
              label="Within (days)"
              hint="Counted from each visitor’s first visit in the experiment."
              messages={at.get('goal.days')}
              className="exp-field--narrow"
              value={form.days}
              onChange={(value) => set('days', value)}
            />
          </div>
        </fieldset>

        <fieldset className="exp-group">
          <legend className="flows-subtitle">Guardrails</legend>
          <p className="flows-hint">An arm above a limit is marked in the figures. Leave a limit empty for none.</p>
          {groupProblems('guardrails')}
          <div className="admin-filters">
            <NumberField
              id="exp-refund"
              label="Max refund rate (%)"
              messages={at.get('guardrails.maxRefundRate')}
              decimal
              value={form.maxRefundRate}
              onChange={(value) => set('maxRefundRate', value)}
            />
            <NumberField
              id="exp-early"
              label="Max early-leave rate (%)"
              messages={at.get('guardrails.maxEarlyLeaveRate')}
              decimal
              value={form.maxEarlyLeaveRate}
              onChange={(value) => set('maxEarlyLeaveRate', value)}
            />
          </div>
          <p className="flows-hint">Early leave: a chat visitor who leaves before their second message.</p>
        </fieldset>

        <fieldset className="exp-group">
          <legend className="flows-subtitle">When there is a winner</legend>
          <p className="flows-hint">
            An arm wins when every arm has enough visitors and days, its chance to beat the control (A) is high
            enough, and the loss expected if it is in fact worse is small enough.
          </p>
          <p className="flows-hint">
            The rule is checked again as visitors come, and each look is a new chance of a false winner: with two
            identical arms, 200 visitors a day each and looks from day 7 to 30, a 95 % rule named a winner in 34 %
            of simulated tests (the variant in 16 %); 99 % in 9 % (4 %); 99.5 % in 5 % (2 %). Ask for 99 % when a
            wrong winner would be costly (docs/dashboard.md, “Experiments”).
          </p>
          {groupProblems('rule')}
          <div className="admin-filters">
            <NumberField
              id="exp-min-exposures"
              label="Min visitors per arm"
              messages={at.get('rule.minExposures')}
              value={form.minExposures}
              onChange={(value) => set('minExposures', value)}
            />
            <NumberField
              id="exp-min-days"
              label="Min days"
              messages={at.get('rule.minDays')}
              value={form.minDays}
              onChange={(value) => set('minDays', value)}
            />
            <NumberField
              id="exp-chance"
              label="Chance to beat (%)"
              messages={at.get('rule.chance')}
              decimal
              value={form.chance}
              onChange={(value) => set('chance', value)}
            />
            <NumberField
              id="exp-max-loss"
              label={`Max expected loss (${lossUnit})`}
              hint={
                form.metric === 'trial_paid'
                  ? 'Of the trial-paid rate: 0.2 means 0.2 percentage points.'
                  : 'Of the net revenue per visitor, in dollars: 0.05 means 5 cents.'
              }
              messages={at.get('rule.maxLoss')}
              decimal
              value={form.maxLoss}
              onChange={(value) => set('maxLoss', value)}
            />
          </div>
          <label className="admin-check exp-check">
            <input
              type="checkbox"
              className="admin-check__box"
              checked={form.autoPromote}
              onChange={(event) => set('autoPromote', event.target.checked)}
              aria-describedby="exp-auto-hint"
            />
            Promote the winner automatically
          </label>
          <p id="exp-auto-hint" className="flows-hint">
            When an arm wins, its flow version and offer are published for this experiment’s visitors without asking,
            and the experiment stops. Otherwise you promote it yourself.
          </p>
          {groupProblems('autoPromote')}
        </fieldset>

        <div className="flows-actions">
          <Button type="submit" disabled={busy} aria-busy={busy}>
            {busy ? 'Saving...' : experiment ? 'Save draft' : 'Create draft'}
          </Button>
          <Button variant="secondary" onClick={onCancel}>
            Cancel
          </Button>
        </div>
      </form>
    </Section>
  );
}
