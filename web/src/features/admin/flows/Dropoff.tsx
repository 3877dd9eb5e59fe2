import { useEffect, useRef, useState, type CSSProperties } from 'react';
import { formatCount, formatRange, isDayKey } from '../format';
import { PRESETS } from '../url-state';
import { DROPOFF_FUNNELS, dropoffRows, versionsOf, type DropoffRow } from './dropoff-model';
import { flowsApi, type Dropoff as DropoffData, type DropoffFlow, type DropoffQuery } from './flows-api';
import { Section } from './parts';
import { LoadFailed } from '../sections';

export const DROPOFF_FAILED = 'The drop-off could not be read. Please try again.';
export const DATES_WRONG = 'Choose a first and a last day, the first not after the last.';
/** How long typing in a field may pause before the filter applies. */
export const SETTLE_MS = 600;

/** The versions' colours in the bars, in turn. */
const VERSION_COLOURS = ['#1f5fbf', '#0f7b6c', '#b54708', '#6941c6', '#c11574', '#475467'];

type Load = { data: DropoffData | null; error: string | null; loading: boolean };

function useDropoff(query: DropoffQuery, version: number): Load {
  const [load, setLoad] = useState<Load>({ data: null, error: null, loading: true });
  const { from, to, funnel, flow, campaign, keyword } = query;
  useEffect(() => {
    const controller = new AbortController();
    setLoad((current) => ({ ...current, loading: true }));
    flowsApi
      .dropoff({ from, to, funnel, flow, campaign, keyword }, controller.signal)
      .then((data) => setLoad({ data, error: null, loading: false }))
      .catch(() => {
        if (controller.signal.aborted) return;
        setLoad((current) => ({ ...current, error: DROPOFF_FAILED, loading: false }));
      });
    return () => controller.abort();
  }, [from, to, funnel, flow, campaign, keyword, version]);
  return load;
}

/** A text filter that applies once typing pauses, when the field is left, or on Enter. */
function TextFilter({ label, value, onApply }: { label: string; value: string; onApply: (value: string) => void }) {
  const [draft, setDraft] = useState(value);
  const [shown, setShown] = useState(value);
  if (shown !== value) {
    // Changed elsewhere (Back, a link): the field follows.
    setShown(value);
    setDraft(value);
  }
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const apply = (next: string) => {
    clearTimeout(timer.current);
    if (next.trim() !== value) onApply(next.trim());
  };
  return (
    <label className="admin-field">
      <span className="admin-field__label">{label}</span>
      <input
        type="search"
        className="admin-field__control"
        value={draft}
        onChange={(event) => {
          const next = event.target.value;
          setDraft(next);
          clearTimeout(timer.current);
          timer.current = setTimeout(() => apply(next), SETTLE_MS);
        }}
        onBlur={() => apply(draft)}
        onKeyDown={(event) => {
          if (event.key === 'Enter') apply(draft);
        }}
      />
    </label>
  );
}

function Filters({
  query,
  flows,
  onChange,
  now,
}: {
  query: DropoffQuery;
  flows: string[];
  onChange: (change: Partial<DropoffQuery>) => void;
  now: Date;
}) {
  const [dates, setDates] = useState({ from: query.from, to: query.to });
  const [shown, setShown] = useState({ from: query.from, to: query.to });
  const [error, setError] = useState(false);
  if (shown.from !== query.from || shown.to !== query.to) {
    setShown({ from: query.from, to: query.to });
    setDates({ from: query.from, to: query.to });
    setError(false);
  }
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  function commit(next: { from: string; to: string }, final: boolean) {
    clearTimeout(timer.current);
    const whole = (day: string) => isDayKey(day) && day >= '2000-01-01';
    if (!whole(next.from) || !whole(next.to) || next.from > next.to) {
      if (final || (whole(next.from) && whole(next.to))) setError(true);
      return;
    }
    setError(false);
    if (next.from !== query.from || next.to !== query.to) onChange(next);
  }

  function edit(field: 'from' | 'to', value: string) {
    const next = { ...dates, [field]: value };
    setDates(next);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => commit(next, false), SETTLE_MS);
  }

  return (
    <div className="admin-filters-block">
      <div className="admin-presets" role="group" aria-label="Range of days">
        {PRESETS.map((preset) => {
          const range = preset.range(now);
          return (
            <button
              key={preset.label}
              type="button"
              className="admin-preset"
              aria-pressed={range.from === query.from && range.to === query.to}
              onClick={() => onChange(range)}
            >
              {preset.label}
            </button>
          );
        })}
      </div>
      <div className="admin-filters">
        {(['from', 'to'] as const).map((field) => (
          <label key={field} className="admin-field">
            <span className="admin-field__label">{field === 'from' ? 'From' : 'To'}</span>
            <input
              type="date"
              className="admin-field__control"
              value={dates[field]}
              onChange={(event) => edit(field, event.target.value)}
              onBlur={() => commit(dates, true)}
              aria-invalid={error ? true : undefined}
              aria-describedby={error ? 'flows-dropoff-dates-error' : undefined}
              required
            />
          </label>
        ))}
        <label className="admin-field">
          <span className="admin-field__label">Funnel</span>
          <select
            className="admin-field__control"
            value={query.funnel ?? ''}
            onChange={(event) => onChange({ funnel: (event.target.value || undefined) as DropoffQuery['funnel'] })}
          >
            <option value="">Both funnels</option>
            {Object.entries(DROPOFF_FUNNELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label className="admin-field">
          <span className="admin-field__label">Flow</span>
          <select
            className="admin-field__control"
            value={query.flow ?? ''}
            onChange={(event) => onChange({ flow: event.target.value || undefined })}
          >
            <option value="">All flows</option>
            {[...new Set([...flows, query.flow ?? ''].filter(Boolean))].map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <TextFilter
          label="Campaign id"
          value={query.campaign ?? ''}
          onApply={(value) => onChange({ campaign: value || undefined })}
        />
        <TextFilter
          label="Keyword"
          value={query.keyword ?? ''}
          onApply={(value) => onChange({ keyword: value || undefined })}
        />
      </div>
      {error && (
        <p id="flows-dropoff-dates-error" className="form__error" role="alert">
          {DATES_WRONG}
        </p>
      )}
    </div>
  );
}

/** The flow's steps, a row each, its versions side by side. */
function DropoffTable({ flow, rows }: { flow: DropoffFlow; rows: DropoffRow[] }) {
  const versions = versionsOf(flow);
  return (
    <div className="admin-table__frame">
      <div
        className="admin-table__scroll"
        role="region"
        aria-label={`Drop-off of ${flow.name}`}
        tabIndex={0}
        data-testid={`flows-dropoff-${flow.name}`}
      >
        <table className="admin-table flows-dropoff__table">
          <caption className="admin-table__caption">
            How many conversations of “{flow.name}” reached each step, by version; the share of those who joined and of
            the step before; and the median time spent at the step before the next.
          </caption>
          <thead>
            <tr>
              <th scope="col" rowSpan={2}>
                Step
              </th>
              {versions.map((version) => (
                <th key={version} scope="colgroup" colSpan={4} className="flows-dropoff__version">
                  Version {version}
                </th>
              ))}
            </tr>
            <tr className="flows-dropoff__subhead">
              {versions.map((version) => [
                <th key={`${version}-count`} scope="col" className="admin-table__num">
                  Count
                </th>,
                <th key={`${version}-joined`} scope="col" className="admin-table__num">
                  % of joined
                </th>,
                <th key={`${version}-before`} scope="col" className="admin-table__num">
                  % of step before
                </th>,
                <th key={`${version}-median`} scope="col" className="admin-table__num">
                  Median time to next
                </th>,
              ])}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.step} data-step={row.step}>
                <th scope="row">{row.label}</th>
                {row.cells.map((cell) => [
                  <td key={`${cell.version}-count`} className="admin-table__num" data-version={cell.version}>
                    {formatCount(cell.count)}
                    {cell.how && <span className="admin-rate">{cell.how}</span>}
                  </td>,
                  <td key={`${cell.version}-joined`} className="admin-table__num">
                    {cell.ofJoined}
                  </td>,
                  <td key={`${cell.version}-before`} className="admin-table__num">
                    {cell.ofBefore}
                  </td>,
                  <td key={`${cell.version}-median`} className="admin-table__num">
                    {cell.median}
                  </td>,
                ])}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

/** A bar per step and version, as long as its share of the most who joined any version. */
function DropoffBars({ flow, rows }: { flow: DropoffFlow; rows: DropoffRow[] }) {
  const versions = versionsOf(flow);
  const most = Math.max(1, ...rows.flatMap((row) => row.cells.map((cell) => cell.count)));
  const summary = versions
    .map((version) => {
      const first = rows[0]?.cells.find((cell) => cell.version === version)?.count ?? 0;
      const last = rows[rows.length - 1]?.cells.find((cell) => cell.version === version)?.count ?? 0;
      return `version ${version}: ${formatCount(first)} ${rows[0]?.label.toLowerCase() ?? ''}, ${formatCount(last)} ${rows[rows.length - 1]?.label.toLowerCase() ?? ''}`;
    })
    .join('; ');
  return (
    <figure className="flows-bars">
      <div className="flows-bars__legend" aria-hidden="true">
        {versions.map((version, index) => (
          <span key={version} className="flows-bars__key">
            <span
              className="admin-chart__swatch"
              style={{ background: VERSION_COLOURS[index % VERSION_COLOURS.length] }}
            />
            Version {version}
          </span>
        ))}
      </div>
      <div className="flows-bars__steps" role="img" aria-label={`Drop-off of ${flow.name} by step: ${summary}.`}>
        {rows.map((row) => (
          <div key={row.step} className="flows-bars__step">
            <p className="flows-bars__label">{row.label}</p>
            <div className="flows-bars__group">
              {row.cells.map((cell, index) => {
                const style = {
                  '--share': `${(cell.count / most) * 100}%`,
                  '--colour': VERSION_COLOURS[index % VERSION_COLOURS.length],
                } as CSSProperties;
                return (
                  <div key={cell.version} className="flows-bars__row">
                    <span className="flows-bars__bar" style={style} />
                    <span className="flows-bars__value">
                      {formatCount(cell.count)} <span className="flows-bars__rate">({cell.ofJoined})</span>
                    </span>
                  </div>
                );
              })}
            </div>
          </div>
        ))}
      </div>
    </figure>
  );
}

/**
 * The drop-off at every step of the chat funnels, for each flow version, from the roll-ups: the
 * filters (range, funnel, flow, campaign, keyword) are in the address; a table and bars per flow,
 * and the CSV of the same.
 */
export function Dropoff({
  query,
  flows,
  onChange,
  now = new Date(),
}: {
  query: DropoffQuery;
  flows: string[];
  onChange: (change: Partial<DropoffQuery>) => void;
  now?: Date;
}) {
  const [version, setVersion] = useState(0);
  const load = useDropoff(query, version);
  const data = load.data;
  return (
    <Section
      id="flows-dropoff-title"
      title="Drop-off by step"
      actions={
        <a className="btn btn--secondary admin-csv" href={flowsApi.dropoffCsvHref(query)} download>
          Download CSV
        </a>
      }
    >
      <Filters query={query} flows={flows} onChange={onChange} now={now} />
      <p className="admin-range" aria-live="polite">
        Showing <strong>{formatRange(query.from, query.to)}</strong>
        {load.loading && data && <span className="admin-range__busy"> Updating...</span>}
      </p>
      <p className="admin-section__note">
        Conversations that began in these days (UTC), counted once at each step they reached. Each version keeps its
        own counts: an edit resets nothing. Previews are not counted.
      </p>
      {load.error && (
        <LoadFailed error={load.error} onRetry={() => setVersion((current) => current + 1)} />
      )}
      {data === null ? (
        !load.error && (
          <p className="admin-loading" role="status">
            <span className="spinner" aria-hidden="true" /> Loading the drop-off...
          </p>
        )
      ) : data.flows.length === 0 ? (
        <p className="ops-loaded">No conversations in these days.</p>
      ) : (
        data.flows.map((flow) => {
          const rows = dropoffRows(flow, data.steps);
          return (
            <div key={flow.name} className="flows-dropoff__flow">
              <h3 className="flows-subtitle">“{flow.name}”</h3>
              <DropoffTable flow={flow} rows={rows} />
              <DropoffBars flow={flow} rows={rows} />
            </div>
          );
        })
      )}
    </Section>
  );
}
