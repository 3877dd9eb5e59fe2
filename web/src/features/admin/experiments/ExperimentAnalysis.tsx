import { type ReactNode } from 'react';
import { Button } from '../../../components/Button';
import { useOverflow } from '../SortableTable';
import {
  armLetter,
  type Analysis,
  type ArmFigures,
  type Comparison,
  type Experiment,
  type Interval,
  type Metric,
} from './experiments-api';
import {
  formatCents,
  formatCount,
  formatDifference,
  formatLoss,
  formatPercent,
  METRIC_NAMES,
  plural,
  runningSentence,
  srmSentence,
} from './experiments-format';

/**
 * The fewest visitors an arm needs before its 95 % intervals are shown. Below this an interval is
 * more misleading than helpful: one visitor who paid reads "100.0 %" over "15.8 % – 98.7 %", and
 * one $1.00 checkout gives a revenue range of "$1.00 – $1.00", as if it were certain.
 */
export const MIN_VISITORS_FOR_RANGE = 30;

/** What is shown instead of an interval below MIN_VISITORS_FOR_RANGE. */
export const TOO_FEW_FOR_RANGE = 'Too few visitors for a range';

/** Whether an arm has visitors enough for its intervals to be shown. */
export function showsRange(arm: ArmFigures): boolean {
  return arm.exposures >= MIN_VISITORS_FOR_RANGE;
}

/** The metrics as the small lines under a figure name them. */
const SHORT: Record<Metric, string> = { trial_paid: 'Trial paid', revenue: 'Revenue' };

/** The other metric: its figures are shown too, smaller. */
const OTHER: Record<Metric, Metric> = { trial_paid: 'revenue', revenue: 'trial_paid' };

function comparisonOf(arm: ArmFigures, metric: Metric): Comparison | null {
  return metric === 'trial_paid' ? arm.conversion : arm.revenue;
}

/**
 * The control's expected loss: what is lost, in the metric's unit, by keeping the control when
 * another arm is in fact better (against the best of them when there are several).
 */
function controlLoss(arms: ArmFigures[], metric: Metric): number | null {
  const losses = arms.flatMap((arm) => {
    const comparison = comparisonOf(arm, metric);
    return comparison ? [comparison.expectedLossControl] : [];
  });
  return losses.length === 0 ? null : Math.max(...losses);
}

function rateInterval(interval: Interval): string {
  return `${formatPercent(interval.low)} – ${formatPercent(interval.high)}`;
}

function centsInterval(interval: Interval): string {
  return `${formatCents(interval.low)} – ${formatCents(interval.high)}`;
}

/** A small line under a figure: its text, or its text and its own class. */
type Line = string | { text: string; className: string } | null;

/** An arm's interval, or the words saying it has too few visitors for one. */
function rangeLine(arm: ArmFigures, text: string): Line {
  return showsRange(arm) ? text : { text: TOO_FEW_FOR_RANGE, className: 'exp-few' };
}

/** A figure with smaller lines under it. */
function Figure({ main, under = [] }: { main: ReactNode; under?: Line[] }) {
  return (
    <>
      {main}
      {under
        .filter((line): line is Exclude<Line, null> => line !== null)
        .map((line) =>
          typeof line === 'string' ? (
            <span key={line} className="admin-rate">
              {line}
            </span>
          ) : (
            <span key={line.text} className={`admin-rate ${line.className}`}>
              {line.text}
            </span>
          ),
        )}
    </>
  );
}

/** One figure of an arm's card: its name and its value. */
function Item({ term, children, testId }: { term: string; children: ReactNode; testId?: string }) {
  return (
    <div className="exp-card__item" data-testid={testId}>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** A guardrail's rate, marked when it is above the limit. */
function GuardedRate({
  rate,
  limit,
  detail,
}: {
  rate: number | null;
  limit: number | null;
  detail: string;
}) {
  const breached = rate !== null && limit !== null && rate > limit;
  return (
    <>
      <span className={breached ? 'exp-breach' : undefined} data-breach={breached ? 'true' : undefined}>
        {formatPercent(rate)}
      </span>
      {breached && <span className="admin-rate exp-breach__word">Above the limit of {formatPercent(limit)}</span>}
      <span className="admin-rate">{detail}</span>
    </>
  );
}

/**
 * How the experiment stands: the rule's sentence, a warning when the arms did not get the share of
 * visitors their weights set, and each arm's figures against the control (for the goal's metric,
 * the other one smaller), with the guardrails' breaches marked.
 */
export function ExperimentAnalysis({
  experiment,
  analysis,
  onPromote,
  verdict = true,
}: {
  experiment: Experiment;
  analysis: Analysis;
  /** The rule's sentence and the button to promote its pick (false: the page shows them above). */
  verdict?: boolean;
  /** Asks to promote an arm (behind a confirmation); none: the promote button is not offered. */
  onPromote?: (arm: string) => void;
}) {
  const metric = experiment.goal.metric;
  const other = OTHER[metric];
  const { guardrails } = experiment;
  const promotable = analysis.promotable ? analysis.arms.find((arm) => arm.key === analysis.promotable) : undefined;
  const pick = analysis.decision.state === 'winner' ? analysis.arms[analysis.decision.arm]?.key : undefined;
  const { scroller, edges } = useOverflow();
  const breaches = analysis.arms.filter((arm) => (arm.guardrailBreaches ?? []).length > 0);

  const chanceCell = (arm: ArmFigures, index: number, control = 'Control') => {
    if (index === 0) return <span className="admin-none">{control}</span>;
    const main = comparisonOf(arm, metric);
    const second = comparisonOf(arm, other);
    return (
      <Figure
        main={<strong>{main ? formatPercent(main.chanceToBeat) : '–'}</strong>}
        under={[
          main ? `${formatDifference(metric, main.difference)} vs control` : null,
          second ? `${SHORT[other]}: ${formatPercent(second.chanceToBeat)}` : null,
        ]}
      />
    );
  };

  const armTitle = (arm: ArmFigures, index: number) => (
    <>
      {armLetter(index)} · {arm.name}
      {experiment.winner === arm.key && (
        <>
          {' '}
          <span className="flows-tag">{experiment.promotedAt ? 'Promoted' : 'Winner'}</span>
        </>
      )}
      {!experiment.winner && pick === arm.key && (
        <>
          {' '}
          <span className="flows-tag">Wins</span>
        </>
      )}
    </>
  );

  const rateFigure = (arm: ArmFigures) => (
    <Figure
      main={<strong className={metric === 'trial_paid' ? undefined : 'exp-second'}>{formatPercent(arm.conversionRate)}</strong>}
      under={[rangeLine(arm, rateInterval(arm.conversionInterval))]}
    />
  );

  const revenueFigure = (arm: ArmFigures) => (
    <Figure
      main={<strong className={metric === 'revenue' ? undefined : 'exp-second'}>{formatCents(arm.revenuePerVisitor)}</strong>}
      under={[rangeLine(arm, centsInterval(arm.revenueInterval)), `${formatCents(arm.netCents)} in all`]}
    />
  );

  const refundRate = (arm: ArmFigures) => (
    <GuardedRate
      rate={arm.refundRate}
      limit={guardrails.maxRefundRate}
      detail={`${formatCount(arm.refunds)} of ${plural(arm.fees, 'fee')}`}
    />
  );

  const earlyLeaveRate = (arm: ArmFigures) => (
    <GuardedRate
      rate={arm.earlyLeaveRate}
      limit={guardrails.maxEarlyLeaveRate}
      detail={`${formatCount(arm.earlyLeaves)} of ${plural(arm.chatExposures, 'chat')}`}
    />
  );

  const lossCell = (arm: ArmFigures, index: number) => {
    const main = index === 0 ? controlLoss(analysis.arms, metric) : (comparisonOf(arm, metric)?.expectedLoss ?? null);
    const second = index === 0 ? controlLoss(analysis.arms, other) : (comparisonOf(arm, other)?.expectedLoss ?? null);
    return (
      <Figure
        main={<strong>{main === null ? '–' : formatLoss(metric, main)}</strong>}
        under={[second === null ? null : `${SHORT[other]}: ${formatLoss(other, second)}`]}
      />
    );
  };

  return (
    <div className="exp-analysis" data-testid="exp-analysis">
      <div className="exp-verdict">
        {verdict && (
          <p className="exp-verdict__text" data-testid="exp-status-sentence">
            {analysis.status}
          </p>
        )}
        <p className="exp-verdict__days" data-testid="exp-running">
          {runningSentence(analysis.daysRunning, experiment.status, experiment.startedAt !== null)}. Goal:{' '}
          {METRIC_NAMES[metric].toLowerCase()} within {plural(experiment.goal.days, 'day')}.
        </p>
        {verdict && promotable && onPromote && (
          <Button onClick={() => onPromote(promotable.key)}>
            Promote arm {promotable.key.toUpperCase()} ({promotable.name})
          </Button>
        )}
      </div>

      {analysis.srm.warning && (
        <div className="flows-message flows-message--warning exp-srm" role="alert" data-testid="exp-srm">
          <p className="flows-message__text">{srmSentence(analysis.srm)}</p>
        </div>
      )}

      <div
        className="admin-table__frame exp-table-frame"
        data-more-left={edges.left ? 'true' : undefined}
        data-more-right={edges.right ? 'true' : undefined}
      >
        {/* Focusable so that a keyboard scrolls it on a phone; named so that a screen reader says what it is. */}
        <div ref={scroller} className="admin-table__scroll" role="region" aria-label="Figures by arm" tabIndex={0}>
          <table className="admin-table exp-table">
            <caption className="admin-table__caption">
              Each arm’s visitors and results, with 95 % intervals, against the control (A)
            </caption>
            <thead>
              <tr>
                <th scope="col">Arm</th>
                <th scope="col" className="admin-table__num">
                  Visitors
                </th>
                <th scope="col" className="admin-table__num">
                  Trial paid
                </th>
                <th scope="col">Trial-paid rate</th>
                <th scope="col">Net revenue per visitor</th>
                <th scope="col">Chance to beat the control</th>
                <th scope="col">Expected loss</th>
                <th scope="col">Refund rate</th>
                <th scope="col">Early-leave rate</th>
              </tr>
            </thead>
            <tbody>
              {analysis.arms.map((arm, index) => (
                <tr key={arm.key} data-testid={`exp-arm-row-${arm.key}`}>
                  <th scope="row">{armTitle(arm, index)}</th>
                  <td className="admin-table__num">{formatCount(arm.exposures)}</td>
                  <td className="admin-table__num">{formatCount(arm.conversions)}</td>
                  <td>{rateFigure(arm)}</td>
                  <td>{revenueFigure(arm)}</td>
                  <td>{chanceCell(arm, index)}</td>
                  <td>{lossCell(arm, index)}</td>
                  <td>{refundRate(arm)}</td>
                  <td>{earlyLeaveRate(arm)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </div>

      {(edges.left || edges.right) && (
        <p className="admin-table__hint exp-table-hint" aria-hidden="true">
          Scroll sideways for more columns.
        </p>
      )}

      {/* On a phone (CSS shows one or the other): each arm as a card, its figures one under another. */}
      <div className="exp-cards" data-testid="exp-cards">
        <p className="exp-cards__note">Each arm’s visitors and results, with 95 % intervals, against the control (A)</p>
        <ul className="exp-cards__list" aria-label="Figures by arm">
          {analysis.arms.map((arm, index) => (
            <li key={arm.key} className="exp-card" data-testid={`exp-arm-card-${arm.key}`}>
              <h3 className="exp-card__title">{armTitle(arm, index)}</h3>
              <dl className="exp-card__figures">
                <Item term="Visitors">{formatCount(arm.exposures)}</Item>
                {metric === 'trial_paid' ? (
                  <Item term="Trial paid">
                    <Figure
                      main={
                        <>
                          <strong>{formatCount(arm.conversions)}</strong> ({formatPercent(arm.conversionRate)})
                        </>
                      }
                      under={[rangeLine(arm, rateInterval(arm.conversionInterval))]}
                    />
                  </Item>
                ) : (
                  <Item term="Net revenue per visitor">{revenueFigure(arm)}</Item>
                )}
                <Item term="Chance to beat the control">{chanceCell(arm, index, 'This is the control')}</Item>
                <Item term="Expected loss">{lossCell(arm, index)}</Item>
                <Item term="Refund rate">{refundRate(arm)}</Item>
                <Item term="Early-leave rate">{earlyLeaveRate(arm)}</Item>
                {(arm.guardrailBreaches ?? []).length > 0 && (
                  <Item term="Guardrails crossed" testId={`exp-card-breaches-${arm.key}`}>
                    <ul className="exp-card__breaches">
                      {arm.guardrailBreaches.map((text, at) => (
                        <li key={at} className="exp-breach">
                          {text}
                        </li>
                      ))}
                    </ul>
                  </Item>
                )}
              </dl>
            </li>
          ))}
        </ul>
      </div>

      {breaches.length > 0 && (
        <div className="flows-problems exp-breaches" data-testid="exp-breaches">
          <p className="flows-problems__title">Guardrails crossed</p>
          <ul>
            {breaches.flatMap((arm) =>
              arm.guardrailBreaches.map((text, index) => (
                <li key={`${arm.key}-${index}`}>
                  Arm {arm.key.toUpperCase()} ({arm.name}): {text}
                </li>
              )),
            )}
          </ul>
        </div>
      )}
    </div>
  );
}
