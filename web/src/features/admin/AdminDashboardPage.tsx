import { useEffect, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { usePublicConfig } from '../../lib/public-config';
import { adminApi, type By, type FunnelFigures, type Report, type ReportQuery, type Row } from './api';
import { DailyChart } from './DailyChart';
import { DeleteAccount } from './DeleteAccount';
import { LivePanel } from './LivePanel';
import { SortableTable, type Column } from './SortableTable';
import {
  BY_NAMES,
  FUNNEL_NAMES,
  STEPS,
  dayKey,
  formatCents,
  formatCount,
  formatRate,
  funnelName,
  keyLabel,
} from './format';
import './admin.css';

const TITLE_ID = 'admin-dashboard-title';
export const NOT_AVAILABLE = 'This page is not available.';
export const LOAD_FAILED = 'The dashboard could not be loaded. Please try again.';

type Load<T> = { data: T | null; error: string | null; unavailable: boolean; loading: boolean };
const LOADING = { data: null, error: null, unavailable: false, loading: true };

function useReport(query: ReportQuery): Load<Report> {
  const [load, setLoad] = useState<Load<Report>>(LOADING);
  const { from, to, by, funnel, campaign } = query;
  useEffect(() => {
    const controller = new AbortController();
    setLoad((current) => ({ ...current, loading: true }));
    adminApi
      .report({ from, to, by, funnel, campaign }, controller.signal)
      .then((data) => setLoad({ data, error: null, unavailable: false, loading: false }))
      .catch((cause) => {
        if (controller.signal.aborted) return;
        if (cause instanceof ApiError && (cause.status === 404 || cause.status === 401)) {
          setLoad({ data: null, error: null, unavailable: true, loading: false });
          return;
        }
        const message = cause instanceof ApiError && cause.status === 400 ? cause.message : LOAD_FAILED;
        setLoad((current) => ({ ...current, error: message, loading: false }));
      });
    return () => controller.abort();
  }, [from, to, by, funnel, campaign]);
  return load;
}

function stepColumns<T extends FunnelFigures | Row>(): Column<T>[] {
  return STEPS.map(([key, label]) => ({
    key,
    label,
    numeric: true,
    value: (row: T) => row[key],
    render: (row: T) => formatCount(row[key]),
  }));
}

function moneyColumns<T extends FunnelFigures | Row>(): Column<T>[] {
  return [
    {
      key: 'rate',
      label: 'Visitor to trial',
      numeric: true,
      value: (row) => (row.visitors > 0 ? row.trial / row.visitors : 0),
      render: (row) => formatRate(row.trial, row.visitors),
    },
    { key: 'net', label: 'Net revenue', numeric: true, value: (row) => row.net_cents, render: (row) => formatCents(row.net_cents) },
    {
      key: 'per_visitor',
      label: 'Net per visitor',
      numeric: true,
      value: (row) => row.net_cents_per_visitor,
      render: (row) => formatCents(row.net_cents_per_visitor),
    },
  ];
}

/** Each funnel's steps, with each step's rate from the step before it. */
function FunnelsTable({ report, query }: { report: Report; query: ReportQuery }) {
  const columns: Column<FunnelFigures>[] = [
    { key: 'funnel', label: 'Funnel', value: (row) => funnelName(row.funnel) },
    ...STEPS.map(([key, label], index) => ({
      key,
      label,
      numeric: true,
      value: (row: FunnelFigures) => row[key],
      render: (row: FunnelFigures) => (
        <>
          {formatCount(row[key])}
          {index > 0 && (
            <span className="admin-rate">{formatRate(row[key], row[STEPS[index - 1][0]])}</span>
          )}
        </>
      ),
    })),
    ...moneyColumns<FunnelFigures>(),
  ];
  return (
    <section className="card admin-section" aria-labelledby="admin-funnels-title">
      <div className="admin-section__head">
        <h2 id="admin-funnels-title" className="admin-section__title">
          Funnels
        </h2>
        <a className="btn btn--secondary admin-csv" href={adminApi.csvHref(query, 'funnels')} download>
          Download CSV
        </a>
      </div>
      <SortableTable
        caption="Visitors who began in these days, and how far they got (the rate under each step is from the step before)"
        columns={columns}
        rows={report.funnels}
        rowKey={(row) => row.funnel}
        initialSort={{ key: 'visitors', descending: true }}
        empty="No visitors in these days."
      />
    </section>
  );
}

function Revenue({ report }: { report: Report }) {
  const { total } = report;
  const tiles = [
    ['Setup fees taken', formatCents(total.fee_cents)],
    ['Setup fees refunded', formatCents(total.fee_refund_cents)],
    ['Subscriptions', formatCents(total.subscription_cents)],
    ['Net revenue', formatCents(total.net_cents)],
    ['Net per visitor', formatCents(total.net_cents_per_visitor)],
  ];
  return (
    <section className="card admin-section" aria-labelledby="admin-revenue-title">
      <h2 id="admin-revenue-title" className="admin-section__title">
        Revenue
      </h2>
      <p className="admin-section__note">
        What the visitors who began in these days have paid so far, less the fees given back.
      </p>
      <dl className="admin-tiles">
        {tiles.map(([label, value]) => (
          <div key={label} className="admin-tile">
            <dt className="admin-tile__label">{label}</dt>
            <dd className="admin-tile__value">{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function Breakdown({
  report,
  query,
  onDrill,
  onBack,
}: {
  report: Report;
  query: ReportQuery;
  onDrill: (campaign: string) => void;
  onBack: () => void;
}) {
  const by = report.by;
  const drillable = by === 'campaign';
  const columns: Column<Row>[] = [
    {
      key: 'key',
      label: BY_NAMES[by],
      value: (row) => row.key,
      render: (row) =>
        drillable && row.key !== '' ? (
          <button type="button" className="admin-link" onClick={() => onDrill(row.key)}>
            {keyLabel(row.key, by)}
          </button>
        ) : (
          keyLabel(row.key, by)
        ),
    },
    ...stepColumns<Row>(),
    ...moneyColumns<Row>(),
  ];
  const title = report.campaign ? `Keywords of campaign ${report.campaign}` : `By ${BY_NAMES[by].toLowerCase()}`;
  const ordered = by === 'day' || by === 'week';
  return (
    <section className="card admin-section" aria-labelledby="admin-breakdown-title">
      <div className="admin-section__head">
        <h2 id="admin-breakdown-title" className="admin-section__title">
          {title}
        </h2>
        <div className="admin-section__actions">
          {report.campaign && (
            <Button variant="secondary" onClick={onBack}>
              Back to all campaigns
            </Button>
          )}
          <a className="btn btn--secondary admin-csv" href={adminApi.csvHref(query, 'rows')} download>
            Download CSV
          </a>
        </div>
      </div>
      <SortableTable
        key={`${by}-${report.campaign ?? ''}`}
        caption={
          drillable
            ? 'Choose a campaign to see its keywords. Click a column to sort.'
            : 'Click a column to sort.'
        }
        columns={columns}
        rows={report.rows}
        rowKey={(row) => row.key}
        initialSort={ordered ? undefined : { key: 'visitors', descending: true }}
        empty="No visitors in these days."
      />
    </section>
  );
}

function Unavailable() {
  return (
    <section className="card admin-unavailable" aria-labelledby={TITLE_ID}>
      <h1 id={TITLE_ID} className="page-title">
        Dashboard
      </h1>
      <p>{NOT_AVAILABLE}</p>
      <p>
        <Link to="/" className="btn btn--primary">
          Return to Home
        </Link>
      </p>
    </section>
  );
}

/**
 * `/admin`: the operator's dashboard. Which funnels, campaigns and keywords bring visitors who pay
 * and stay, and what they earn. The server decides who may see it (its endpoints answer 404 to
 * anyone but an admin); this page shows what it answers.
 */
export function AdminDashboardPage() {
  const { debugTools } = usePublicConfig();
  const [draft, setDraft] = useState({ from: dayKey(29), to: dayKey(0) });
  const [query, setQuery] = useState<ReportQuery>({ from: dayKey(29), to: dayKey(0), by: 'campaign' });
  const report = useReport(query);
  const daily = useReport({ from: query.from, to: query.to, by: 'day', funnel: query.funnel, campaign: query.campaign });

  if (report.unavailable || daily.unavailable) return <Unavailable />;

  function apply(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setQuery((current) => ({ ...current, from: draft.from, to: draft.to }));
  }

  const data = report.data;
  return (
    <div className="admin-page">
      <section className="card admin-section" aria-labelledby={TITLE_ID}>
        <div className="admin-section__head">
          <h1 id={TITLE_ID} className="page-title">
            Dashboard
          </h1>
          {debugTools && (
            <Link to="/admin/checkout-debug" className="admin-link">
              Checkout debug
            </Link>
          )}
        </div>
        <form className="admin-filters" onSubmit={apply}>
          <label className="admin-field">
            <span className="admin-field__label">From</span>
            <input
              type="date"
              className="admin-field__control"
              value={draft.from}
              max={draft.to}
              onChange={(event) => setDraft((current) => ({ ...current, from: event.target.value }))}
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
              onChange={(event) => setDraft((current) => ({ ...current, to: event.target.value }))}
              required
            />
          </label>
          <label className="admin-field">
            <span className="admin-field__label">Funnel</span>
            <select
              className="admin-field__control"
              value={query.funnel ?? ''}
              onChange={(event) => setQuery((current) => ({ ...current, funnel: event.target.value || undefined }))}
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
              value={query.by}
              onChange={(event) =>
                setQuery((current) => ({ ...current, by: event.target.value as By, campaign: undefined }))
              }
            >
              {Object.entries(BY_NAMES).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <Button type="submit" disabled={report.loading} aria-busy={report.loading}>
            {report.loading ? 'Loading...' : 'Show'}
          </Button>
        </form>
        <p className="admin-section__note">
          Every figure counts the visitors who first came to a funnel in these days (UTC), with the campaign they first
          came from, and all they did since.
        </p>
        {report.error && (
          <p className="form__error" role="alert">
            {report.error}
          </p>
        )}
      </section>

      <LivePanel />

      {data === null ? (
        !report.error && (
          <p className="admin-loading" role="status">
            <span className="spinner" aria-hidden="true" /> Loading the figures...
          </p>
        )
      ) : (
        <>
          <FunnelsTable report={data} query={query} />
          <Revenue report={data} />
          {daily.data && (
            <section className="card admin-section" aria-labelledby="admin-daily-title">
              <h2 id="admin-daily-title" className="admin-section__title">
                Day by day
              </h2>
              <DailyChart
                from={daily.data.from}
                to={daily.data.to}
                rows={daily.data.rows}
                label={`Visitors, checkouts, trials and first payments per day from ${daily.data.from} to ${daily.data.to}: ${formatCount(daily.data.total.visitors)} visitors, ${formatCount(daily.data.total.trial)} trials.`}
              />
            </section>
          )}
          <Breakdown
            report={data}
            query={query}
            onDrill={(campaign) => setQuery((current) => ({ ...current, by: 'keyword', campaign }))}
            onBack={() => setQuery((current) => ({ ...current, by: 'campaign', campaign: undefined }))}
          />
        </>
      )}

      <DeleteAccount />
    </div>
  );
}
