import { useCallback, useEffect, useState, type CSSProperties, type ReactNode } from 'react';
import { Link, useSearchParams } from 'react-router';
import { Button } from '../../components/Button';
import { ApiError } from '../../lib/api';
import { usePublicConfig } from '../../lib/public-config';
import { adminApi, NO_FIGURES, type Cost, type Figures, type FunnelFigures, type Report, type ReportQuery, type Row } from './api';
import { CostUpload } from './CostUpload';
import { DailyChart } from './DailyChart';
import { DeleteAccount } from './DeleteAccount';
import { ChangeNote, Mark, PendingNotes, rowMark, stepMark, type MarkDef } from './figures';
import { FilterBar } from './FilterBar';
import { HeldPayments } from './HeldPayments';
import { LivePanel } from './LivePanel';
import { LoadFailed, Section, Unavailable } from './sections';
import { SortableTable, type Column, type Sort } from './SortableTable';
import {
  BY_NAMES,
  BY_PLURALS,
  STEPS,
  formatCents,
  formatCentsOrDash,
  formatCount,
  formatRange,
  formatRate,
  formatRoas,
  funnelName,
  keyLabel,
  previousPeriod,
  type StepKey,
} from './format';
import { PAGE_SIZE, readState, reportQuery, writeState, type DashboardState } from './url-state';
import './admin.css';

const TITLE_ID = 'admin-dashboard-title';
export const LOAD_FAILED = 'The dashboard could not be loaded. Please try again.';
export const NO_COST = 'No cost loaded';
export const PREVIOUS_FAILED = 'The previous period could not be loaded.';

type Load<T> = { data: T | null; error: string | null; unavailable: boolean; loading: boolean };
const LOADING = { data: null, error: null, unavailable: false, loading: true };
const IDLE = { data: null, error: null, unavailable: false, loading: false };

/** The report for `query` (none when null), read again when `version` changes. */
function useReport(query: ReportQuery | null, version: number): Load<Report> {
  const [load, setLoad] = useState<Load<Report>>(query ? LOADING : IDLE);
  const { from, to, by, funnel, campaign, keyword } = query ?? {};
  const wanted = query !== null;
  useEffect(() => {
    if (!wanted || !from || !to || !by) {
      setLoad(IDLE);
      return undefined;
    }
    const controller = new AbortController();
    setLoad((current) => ({ ...current, loading: true }));
    adminApi
      .report({ from, to, by, funnel, campaign, keyword }, controller.signal)
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
  }, [wanted, from, to, by, funnel, campaign, keyword, version]);
  return load;
}

/** The funnel, campaign and keyword the figures are for, in words. */
function scopeText(state: DashboardState): string {
  const parts = [state.funnel ? funnelName(state.funnel) : 'all funnels'];
  parts.push(state.campaign ? `campaign ${state.campaign}` : 'all campaigns');
  if (state.campaign && state.keyword) parts.push(`keyword ${state.keyword}`);
  return parts.join(', ');
}

/** A row's figures in the previous period, when the page compares. */
type Previous<T> = ((row: T) => Figures) | null;

/** A count (or money) with its mark, its change from the previous period and anything under it. */
function figureCell(
  value: number,
  format: (value: number) => string,
  options: { mark?: MarkDef; before?: number; under?: ReactNode },
) {
  return (
    <>
      {format(value)}
      {options.mark && <Mark {...options.mark} />}
      {options.under}
      {options.before !== undefined && (
        <span className="admin-under">
          <ChangeNote now={value} before={options.before} format={format} />
        </span>
      )}
    </>
  );
}

/** Each step's column: its count, marked when not final; `rates`: the rate from the step before. */
function stepColumns<T extends Figures>(options: {
  report: Report;
  previous: Previous<T>;
  rates?: boolean;
  rowMarkOf?: (row: T, step: StepKey) => MarkDef | undefined;
}): Column<T>[] {
  const { report, previous, rates, rowMarkOf } = options;
  return STEPS.map(([key, label], index) => ({
    key,
    label,
    mark: stepMark(key, report.pending),
    numeric: true,
    value: (row: T) => row[key],
    render: (row: T) =>
      figureCell(row[key], formatCount, {
        mark: rowMarkOf?.(row, key),
        before: previous ? previous(row)[key] : undefined,
        under:
          rates && index > 0 ? (
            <span className="admin-rate">{formatRate(row[key], row[STEPS[index - 1][0]])}</span>
          ) : undefined,
      }),
  }));
}

function moneyColumns<T extends Figures>(previous: Previous<T>): Column<T>[] {
  return [
    {
      key: 'rate',
      label: 'Visitor to trial',
      numeric: true,
      value: (row) => (row.visitors > 0 ? row.trial / row.visitors : 0),
      render: (row) => formatRate(row.trial, row.visitors),
    },
    {
      key: 'net',
      label: 'Net revenue',
      numeric: true,
      value: (row) => row.net_cents,
      render: (row) =>
        figureCell(row.net_cents, formatCents, { before: previous ? previous(row).net_cents : undefined }),
    },
    {
      key: 'per_visitor',
      label: 'Net per visitor',
      numeric: true,
      value: (row) => row.net_cents_per_visitor,
      render: (row) =>
        figureCell(row.net_cents_per_visitor, formatCents, {
          before: previous ? previous(row).net_cents_per_visitor : undefined,
        }),
    },
  ];
}

type CostColumn = {
  key: string;
  label: string;
  value: (cost: Cost) => number | null;
  format: (value: number | null) => string;
};

const COST_COLUMNS: CostColumn[] = [
  { key: 'cost', label: 'Cost', value: (cost) => cost.cost_cents, format: formatCentsOrDash },
  {
    key: 'cost_per_visitor',
    label: 'Cost per visitor',
    value: (cost) => cost.cost_per_visitor_cents,
    format: formatCentsOrDash,
  },
  {
    key: 'cost_per_trial',
    label: 'Cost per trial (CAC)',
    value: (cost) => cost.cost_per_trial_cents,
    format: formatCentsOrDash,
  },
  { key: 'roas', label: 'ROAS', value: (cost) => cost.roas, format: formatRoas },
  { key: 'profit', label: 'Profit', value: (cost) => cost.profit_cents, format: formatCentsOrDash },
];

/** What the ads cost for each row; a row without a cost says so once, across the five. */
function costColumns(): Column<Row>[] {
  return COST_COLUMNS.map((column, index) => ({
    key: column.key,
    label: column.label,
    numeric: true,
    value: (row) => (row.cost ? column.value(row.cost) : null),
    render: (row) => {
      if (row.cost) return column.format(column.value(row.cost));
      return index === 0 ? <span className="admin-none">{NO_COST}</span> : null;
    },
    span: index === 0 ? (row) => (row.cost ? 1 : COST_COLUMNS.length) : undefined,
  }));
}

/** Each funnel's steps, with each step's rate from the step before it. */
function FunnelsTable({ report, previous, query }: { report: Report; previous: Report | null; query: ReportQuery }) {
  const before = previous
    ? (row: FunnelFigures) => previous.funnels.find((candidate) => candidate.funnel === row.funnel) ?? NO_FIGURES
    : null;
  const columns: Column<FunnelFigures>[] = [
    { key: 'funnel', label: 'Funnel', value: (row) => funnelName(row.funnel) },
    ...stepColumns<FunnelFigures>({ report, previous: before, rates: true }),
    ...moneyColumns<FunnelFigures>(before),
  ];
  return (
    <Section
      id="admin-funnels-title"
      title="Funnels"
      actions={
        <a className="btn btn--secondary admin-csv" href={adminApi.csvHref(query, 'funnels')} download>
          Download CSV
        </a>
      }
    >
      <SortableTable
        caption="Visitors who began in these days, and how far they got (the rate under each step is from the step before)"
        label="Funnels table"
        columns={columns}
        rows={report.funnels}
        rowKey={(row) => row.funnel}
        initialSort={{ key: 'visitors', descending: true }}
        empty="No visitors in these days."
      />
      <PendingNotes pending={report.pending} />
    </Section>
  );
}

type Tile = {
  label: string;
  value: number | null;
  format: (value: number) => string;
  before?: number | null;
  mark?: MarkDef;
  /** A rate's change is told in points. */
  difference?: (value: number) => string;
};

/** Figures as tiles, each with its change from the previous period when there is one. */
function Tiles({ tiles }: { tiles: Tile[] }) {
  return (
    <dl className="admin-tiles">
      {tiles.map((tile) => {
        const text = tile.value === null ? '–' : tile.format(tile.value);
        // The type shrinks to fit a long figure in its tile (admin.css).
        const chars = { '--chars': text.length + (tile.mark ? 1 : 0) } as CSSProperties;
        return (
          <div key={tile.label} className="admin-tile">
            <dt className="admin-tile__label">{tile.label}</dt>
            <dd className="admin-tile__value" style={chars}>
              {text}
              {tile.mark && <Mark {...tile.mark} />}
            </dd>
            {tile.value !== null && tile.before !== undefined && tile.before !== null && (
              <dd className="admin-tile__change">
                <ChangeNote
                  now={tile.value}
                  before={tile.before}
                  format={tile.format}
                  difference={tile.difference}
                  was
                />
              </dd>
            )}
          </div>
        );
      })}
    </dl>
  );
}

/** The funnel, campaign and keyword chosen, in all: the steps that matter most. */
function Totals({ report, previous, state }: { report: Report; previous: Report | null; state: DashboardState }) {
  const { total, pending } = report;
  const was = previous?.total;
  const steps: StepKey[] = ['visitors', 'checkout', 'trial', 'paid', 'retained'];
  const tiles: Tile[] = steps.map((step) => ({
    label: STEPS.find(([key]) => key === step)?.[1] ?? step,
    value: total[step],
    format: formatCount,
    before: was?.[step],
    mark: stepMark(step, pending),
  }));
  tiles.splice(3, 0, {
    label: 'Visitor to trial',
    value: total.visitors > 0 ? total.trial / total.visitors : null,
    format: (value) => `${(value * 100).toFixed(1)}%`,
    before: was && was.visitors > 0 ? was.trial / was.visitors : undefined,
    difference: (value) => `${(value * 100).toFixed(1)} points`,
  });
  return (
    <Section id="admin-totals-title" title="Totals">
      <p className="admin-section__note admin-section__note--first">For {scopeText(state)}.</p>
      <Tiles tiles={tiles} />
      <PendingNotes pending={pending} />
    </Section>
  );
}

function Revenue({ report, previous }: { report: Report; previous: Report | null }) {
  const { total } = report;
  const was = previous?.total;
  const tiles: Tile[] = [
    { label: 'Setup fees taken', value: total.fee_cents, format: formatCents, before: was?.fee_cents },
    { label: 'Setup fees refunded', value: total.fee_refund_cents, format: formatCents, before: was?.fee_refund_cents },
    { label: 'Subscriptions', value: total.subscription_cents, format: formatCents, before: was?.subscription_cents },
    { label: 'Net revenue', value: total.net_cents, format: formatCents, before: was?.net_cents },
    { label: 'Net per visitor', value: total.net_cents_per_visitor, format: formatCents, before: was?.net_cents_per_visitor },
  ];
  const cost = total.cost;
  const wasCost = was?.cost;
  if (cost) {
    tiles.push(
      { label: 'Ad cost', value: cost.cost_cents, format: formatCents, before: wasCost?.cost_cents },
      {
        label: 'Cost per trial (CAC)',
        value: cost.cost_per_trial_cents,
        format: formatCents,
        before: wasCost?.cost_per_trial_cents,
      },
      { label: 'Return on ad spend', value: cost.roas, format: (value) => formatRoas(value), before: wasCost?.roas },
      { label: 'Profit', value: cost.profit_cents, format: formatCents, before: wasCost?.profit_cents },
    );
  }
  return (
    <section className="card admin-section" aria-labelledby="admin-revenue-title">
      <h2 id="admin-revenue-title" className="admin-section__title">
        Revenue
      </h2>
      <p className="admin-section__note">
        What the visitors who began in these days have paid so far, less the fees given back.
        {cost && ' Return on ad spend is net revenue divided by the ads’ cost; profit is net revenue less that cost.'}
      </p>
      <Tiles tiles={tiles} />
    </section>
  );
}

function Breakdown({
  report,
  previous,
  state,
  onChange,
}: {
  report: Report;
  previous: Report | null;
  state: DashboardState;
  onChange: (change: Partial<DashboardState>, replace?: boolean) => void;
}) {
  const by = report.by;
  const campaign = report.campaign ?? state.campaign;
  const keyword = report.keyword ?? state.keyword;
  const ordered = by === 'day' || by === 'week';
  const drillable = by === 'campaign';
  // By keyword across campaigns, each row is a campaign's keyword: its campaign beside it.
  const campaignColumn = by === 'keyword' && !campaign;
  const keywordChoice = by === 'keyword' && !keyword;
  const rowKey = (row: Row) => (row.campaign === undefined ? row.key : `${row.campaign}\u0000${row.key}`);
  const previousRows = previous && !ordered ? new Map(previous.rows.map((row) => [rowKey(row), row])) : null;
  const before = previousRows ? (row: Row) => previousRows.get(rowKey(row)) ?? NO_FIGURES : null;
  const withCost = report.rows.some((row) => row.cost);

  function keyCell(row: Row) {
    const text = keyLabel(row.key, by);
    const rowCampaign = row.campaign ?? campaign;
    if (drillable && row.key !== '') {
      return (
        <button type="button" className="admin-link" onClick={() => drill({ by: 'keyword', campaign: row.key })}>
          {text}
        </button>
      );
    }
    if (keywordChoice && row.key !== '' && rowCampaign) {
      return (
        <button type="button" className="admin-link" onClick={() => drill({ campaign: rowCampaign, keyword: row.key })}>
          {text}
        </button>
      );
    }
    return text;
  }

  function drill(change: Partial<DashboardState>) {
    onChange({ keyword: undefined, search: '', sort: undefined, ...change });
  }

  const columns: Column<Row>[] = [
    { key: 'key', label: BY_NAMES[by], value: (row) => row.key, render: keyCell },
    ...(campaignColumn
      ? [
          {
            key: 'campaign',
            label: 'Campaign',
            value: (row: Row) => row.campaign ?? '',
            render: (row: Row) =>
              row.campaign ? (
                <button
                  type="button"
                  className="admin-link"
                  aria-label={`Campaign ${row.campaign}: its keywords`}
                  onClick={() => drill({ campaign: row.campaign })}
                >
                  {row.campaign}
                </button>
              ) : (
                keyLabel('', 'campaign')
              ),
          },
        ]
      : []),
    ...stepColumns<Row>({
      report,
      previous: before,
      rowMarkOf: (row, step) => rowMark(step, row.key, by, report.pending),
    }),
    ...moneyColumns<Row>(before),
    ...(withCost ? costColumns() : []),
  ];

  // "campaign", "UTM source": the name within a sentence.
  const what = BY_NAMES[by].replace(/^[A-Z][a-z]/, (start) => start.toLowerCase());
  let title = `By ${what}`;
  if (campaign && keyword) title = `Keyword ${keyword} of campaign ${campaign}`;
  else if (campaign && by === 'keyword') title = `Keywords of campaign ${campaign}`;
  else if (campaign) title = `By ${what}, campaign ${campaign}`;

  const captions = ['Click a column to sort.'];
  if (keywordChoice) captions.unshift('Choose a keyword to see its figures alone.');
  if (campaignColumn) captions.unshift('Choose a campaign to see its keywords.');
  if (drillable) captions.unshift('Choose a campaign to see its keywords.');

  const search = state.search.trim().toLowerCase();
  const rows = search
    ? report.rows.filter((row) => keyLabel(row.key, by).toLowerCase().includes(search))
    : report.rows;
  const sort: Sort | undefined = state.sort ?? (ordered ? undefined : { key: 'visitors', descending: true });
  const plural = BY_PLURALS[by];
  const noCostAtAll =
    !withCost && report.rows.some((row) => row.cost === null) && (by === 'campaign' || by === 'keyword');

  return (
    <Section
      id="admin-breakdown-title"
      title={title}
      actions={
        <>
          {keyword && (
            <Button variant="secondary" onClick={() => onChange({ keyword: undefined })}>
              Back to all keywords
            </Button>
          )}
          {campaign && (
            <Button
              variant="secondary"
              onClick={() =>
                onChange({ by: 'campaign', campaign: undefined, keyword: undefined, search: '', sort: undefined })
              }
            >
              Back to all campaigns
            </Button>
          )}
          <a className="btn btn--secondary admin-csv" href={adminApi.csvHref(reportQuery(state), 'rows')} download>
            Download CSV
          </a>
        </>
      }
    >
      {!ordered && (
        <div className="admin-search">
          <label className="admin-field admin-search__field">
            <span className="admin-field__label">Search {plural}</span>
            <input
              type="search"
              className="admin-field__control"
              value={state.search}
              onChange={(event) => onChange({ search: event.target.value }, true)}
            />
          </label>
          {search && (
            <p className="admin-search__count" role="status">
              {formatCount(rows.length)} of {formatCount(report.rows.length)} {rows.length === 1 ? what : plural} match.
            </p>
          )}
        </div>
      )}
      <SortableTable
        caption={captions.join(' ')}
        label={`${BY_NAMES[by]} table`}
        columns={columns}
        rows={rows}
        rowKey={rowKey}
        sort={sort}
        onSort={(next) => onChange({ sort: next })}
        pageSize={PAGE_SIZE}
        page={state.page}
        onPage={(page) => onChange({ page })}
        empty={search ? `No ${what} matches “${state.search.trim()}”.` : 'No visitors in these days.'}
      />
      <PendingNotes pending={ordered ? report.pending : undefined} />
      {withCost && (
        <p className="admin-section__note">
          Cost: what the ads cost in these days (every funnel: a click is not any one funnel&apos;s). Cost per trial is
          the cost of a customer (CAC); ROAS is net revenue divided by cost; profit is net revenue less cost.
        </p>
      )}
      {noCostAtAll && (
        <p className="admin-section__note">
          No ad costs are loaded for these days: upload them under Ad costs to see each {what}&apos;s cost, cost per
          trial, return on ad spend and profit.
        </p>
      )}
    </Section>
  );
}

/**
 * `/admin`: the operator's dashboard. Which funnels, campaigns and keywords bring visitors who pay
 * and stay, what they earn and what their ads cost. The server decides who may see it (its
 * endpoints answer 404 to anyone but an admin); this page shows what it answers. What it shows
 * (range, funnel, breakdown, campaign, keyword, comparison, search, page, order) is in the
 * address: every filter applies as soon as it changes.
 */
export function AdminDashboardPage() {
  const { debugTools } = usePublicConfig();
  const [params, setParams] = useSearchParams();
  const state = readState(params);
  const [version, setVersion] = useState(0);
  const query = reportQuery(state);
  const report = useReport(query, version);
  const daily = useReport({ ...query, by: 'day' }, version);
  const previousRange = previousPeriod(state.from, state.to);
  const previous = useReport(state.compare ? { ...query, ...previousRange } : null, version);

  const update = useCallback(
    (change: Partial<DashboardState>, replace = false) => {
      setParams(
        (current) => {
          const next = { ...readState(current), page: 1, ...change };
          return writeState(next);
        },
        // Filters change the figures below, not the place on the page.
        { replace, preventScrollReset: true },
      );
    },
    [setParams],
  );
  const reload = useCallback(() => setVersion((current) => current + 1), []);

  if (report.unavailable || daily.unavailable) return <Unavailable title="Dashboard" titleId={TITLE_ID} />;

  const data = report.data;
  // While the period before is read again (another range), no change is shown against the old one.
  const before = state.compare && !previous.loading && previous.data ? previous.data : null;
  return (
    <div className="admin-page">
      <section className="card admin-section" aria-labelledby={TITLE_ID}>
        <div className="admin-section__head">
          <h1 id={TITLE_ID} className="page-title">
            Dashboard
          </h1>
          <nav className="admin-section__actions admin-pages" aria-label="Admin pages">
            <Link to="/admin/flows" className="admin-link">
              Flows
            </Link>
            <Link to="/admin/experiments" className="admin-link">
              Experiments
            </Link>
            {debugTools && (
              <Link to="/admin/checkout-debug" className="admin-link">
                Checkout debug
              </Link>
            )}
          </nav>
        </div>
        <FilterBar state={state} onChange={update} />
        <p className="admin-range" aria-live="polite">
          Showing <strong>{formatRange(state.from, state.to)}</strong>
          {state.compare && <>, compared with {formatRange(previousRange.from, previousRange.to)}</>}.
          {report.loading && data && <span className="admin-range__busy"> Updating...</span>}
        </p>
        <p className="admin-section__note">
          Every figure counts the visitors who first came to a funnel in these days (UTC), with the campaign they first
          came from, and all they did since. Each filter applies as soon as it changes, and the address keeps them: a
          reload or a shared link shows this view.
        </p>
        {report.error && (
          <LoadFailed error={report.error} onRetry={reload} />
        )}
        {state.compare && previous.error && !report.error && <p className="form__error">{PREVIOUS_FAILED}</p>}
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
          <Totals report={data} previous={before} state={state} />
          <FunnelsTable report={data} previous={before} query={query} />
          <Revenue report={data} previous={before} />
          <CostUpload onLoaded={reload} />
          {daily.data && (
            <section className="card admin-section" aria-labelledby="admin-daily-title">
              <h2 id="admin-daily-title" className="admin-section__title">
                Day by day
              </h2>
              <DailyChart
                from={daily.data.from}
                to={daily.data.to}
                rows={daily.data.rows}
                pendingFrom={daily.data.pending?.paid_from}
                label={`Visitors, checkouts, trials and first payments per day from ${daily.data.from} to ${daily.data.to}: ${formatCount(daily.data.total.visitors)} visitors, ${formatCount(daily.data.total.trial)} trials.`}
              />
            </section>
          )}
          <Breakdown report={data} previous={before} state={state} onChange={update} />
        </>
      )}

      <HeldPayments />
      <DeleteAccount />
    </div>
  );
}
