import { useEffect, useRef, useState } from 'react';
import type { By } from './api';
import { BY_NAMES, FUNNEL_NAMES, isDayKey } from './format';
import { PRESETS, type DashboardState } from './url-state';

export const RANGE_ORDER = 'The start date must not be after the end date.';
export const NO_FROM = 'Choose the first day (From).';
export const NO_TO = 'Choose the last day (To).';
/** How long typing in a date field may pause before the range applies. */
export const DATE_SETTLE_MS = 600;

/** A whole date as a date field holds it while a year is typed digit by digit ("0002-…" first). */
function usable(day: string): boolean {
  return isDayKey(day) && day >= '2000-01-01';
}

/**
 * The dashboard's filters. Every one applies as soon as it changes: a preset or a menu at once, a
 * date once it is a whole date (after a short pause while it is typed, or when the field is left).
 * `onChange` is told what changed; the page keeps it in the address.
 */
export function FilterBar({
  state,
  onChange,
  now = new Date(),
}: {
  state: DashboardState;
  onChange: (change: Partial<DashboardState>) => void;
  now?: Date;
}) {
  const [draft, setDraft] = useState({ from: state.from, to: state.to });
  const [error, setError] = useState<string | null>(null);
  // A range that changed elsewhere (a preset, Back) replaces what the fields held.
  const [shown, setShown] = useState({ from: state.from, to: state.to });
  if (shown.from !== state.from || shown.to !== state.to) {
    setShown({ from: state.from, to: state.to });
    setDraft({ from: state.from, to: state.to });
    setError(null);
  }
  const latest = useRef({ draft, state, onChange });
  latest.current = { draft, state, onChange };
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);

  /** Applies the dates (`final`: the field was left, so a date still missing is an error). */
  function commit(final: boolean) {
    clearTimeout(timer.current);
    const { draft: dates, state: current, onChange: apply } = latest.current;
    if (!usable(dates.from) || !usable(dates.to)) {
      if (final) setError(!usable(dates.from) ? NO_FROM : NO_TO);
      return;
    }
    if (dates.from > dates.to) {
      setError(RANGE_ORDER);
      return;
    }
    setError(null);
    if (dates.from !== current.from || dates.to !== current.to) apply({ from: dates.from, to: dates.to });
  }

  function edit(field: 'from' | 'to', value: string) {
    const next = { ...latest.current.draft, [field]: value };
    latest.current.draft = next;
    setDraft(next);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => commit(false), DATE_SETTLE_MS);
  }

  return (
    <div className="admin-filters-block">
      <div className="admin-presets" role="group" aria-label="Range of days">
        {PRESETS.map((preset) => {
          const range = preset.range(now);
          const active = range.from === state.from && range.to === state.to;
          return (
            <button
              key={preset.label}
              type="button"
              className="admin-preset"
              aria-pressed={active}
              onClick={() => onChange(range)}
            >
              {preset.label}
            </button>
          );
        })}
      </div>
      <div className="admin-filters">
        <label className="admin-field">
          <span className="admin-field__label">From</span>
          <input
            type="date"
            className="admin-field__control"
            value={draft.from}
            max={draft.to}
            onChange={(event) => edit('from', event.target.value)}
            onBlur={() => commit(true)}
            aria-invalid={error !== null && error !== NO_TO}
            aria-describedby={error ? 'admin-range-error' : undefined}
            required
          />
        </label>
        <label className="admin-field">
          <span className="admin-field__label">To</span>
          <input
            type="date"
            className="admin-field__control"
            value={draft.to}
            min={draft.from}
            onChange={(event) => edit('to', event.target.value)}
            onBlur={() => commit(true)}
            aria-invalid={error !== null && error !== NO_FROM}
            aria-describedby={error ? 'admin-range-error' : undefined}
            required
          />
        </label>
        <label className="admin-field">
          <span className="admin-field__label">Funnel</span>
          <select
            className="admin-field__control"
            value={state.funnel ?? ''}
            onChange={(event) => onChange({ funnel: event.target.value || undefined })}
          >
            <option value="">All funnels</option>
            {Object.entries(FUNNEL_NAMES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label className="admin-field">
          <span className="admin-field__label">Break down by</span>
          <select
            className="admin-field__control"
            value={state.by}
            onChange={(event) => onChange({ by: event.target.value as By, search: '', sort: undefined })}
          >
            {Object.entries(BY_NAMES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <p id="admin-range-error" className="form__error" role="alert">
          {error}
        </p>
      )}
      <label className="admin-check">
        <input
          type="checkbox"
          className="admin-check__box"
          checked={state.compare}
          onChange={(event) => onChange({ compare: event.target.checked })}
        />
        Compare with the previous period
      </label>
      {state.campaign && (
        <div className="admin-scope">
          <p className="admin-scope__text">
            Only campaign <strong>{state.campaign}</strong>
            {state.keyword && (
              <>
                , keyword <strong>{state.keyword}</strong>
              </>
            )}
            .
          </p>
          {state.keyword && (
            <button type="button" className="admin-link" onClick={() => onChange({ keyword: undefined })}>
              Show all keywords
            </button>
          )}
          <button
            type="button"
            className="admin-link"
            onClick={() => onChange({ campaign: undefined, keyword: undefined })}
          >
            Show all campaigns
          </button>
        </div>
      )}
    </div>
  );
}
