import { useCallback, useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { Button } from '../../../components/Button';
import { formatDay } from '../operations-format';
import { LoadFailed, Section, Unavailable } from '../sections';
import { ExperimentDetail, StatusBadge } from './ExperimentDetail';
import { ExperimentEditor } from './ExperimentEditor';
import { experimentsApi, FUNNEL_NAMES, isUnavailable, type Experiment, type ExperimentList } from './experiments-api';
import { scopeSummary } from './experiments-format';
import '../admin.css';
import '../operations.css';
import '../flows/flows.css';
import './experiments.css';

const TITLE_ID = 'admin-experiments-title';
export const EXPERIMENTS_LOAD_FAILED = 'The experiments could not be loaded. Please try again.';

type Load = { data: ExperimentList | null; error: string | null; unavailable: boolean };

/** The experiments, newest first: each with its scope, its status and, while it runs, how it stands. */
function ExperimentTable({ experiments, sentences }: { experiments: Experiment[]; sentences: Map<string, string> }) {
  if (experiments.length === 0) {
    return <p className="admin-none">No experiments yet. “New experiment” starts one as a draft.</p>;
  }
  return (
    <div className="admin-table__frame">
      <div className="admin-table__scroll" role="region" aria-label="Experiments table" tabIndex={0}>
        <table className="admin-table exp-list">
          <caption className="admin-table__caption">Newest first; archived ones last</caption>
          <thead>
            <tr>
              <th scope="col">Experiment</th>
              <th scope="col">Funnel</th>
              <th scope="col">Who takes part</th>
              <th scope="col">Status</th>
              <th scope="col">Started</th>
              <th scope="col">How it stands</th>
            </tr>
          </thead>
          <tbody>
            {experiments.map((experiment) => (
              <tr key={experiment.id} data-testid={`exp-row-${experiment.id}`}>
                <th scope="row">
                  <Link to={{ search: `?id=${encodeURIComponent(experiment.id)}` }} className="admin-link">
                    {experiment.name}
                  </Link>
                </th>
                <td>{FUNNEL_NAMES[experiment.scope.funnel] ?? experiment.scope.funnel}</td>
                <td className="flows-wrap">{scopeSummary(experiment.scope).replace(/^[^:]*: /, '')}</td>
                <td>
                  <StatusBadge status={experiment.status} />
                </td>
                <td>{experiment.startedAt ? formatDay(experiment.startedAt) : <span className="admin-none">Not yet</span>}</td>
                <td className="exp-list__sentence">
                  {experiment.status === 'running' ? (sentences.get(experiment.id) ?? <span className="admin-none">Reading...</span>) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

/**
 * `/admin/experiments`: A/B experiments on the funnels (issue 48). The list; a new experiment;
 * one experiment with its figures, its steps (start, pause, stop, promote, archive) and its
 * history. The address says which (`?new`, `?id=…`, `?id=…&edit`). The server decides who may
 * see it (404 to anyone but an admin).
 */
export function ExperimentsPage() {
  const [params, setParams] = useSearchParams();
  const [load, setLoad] = useState<Load>({ data: null, error: null, unavailable: false });
  const [sentences, setSentences] = useState<Map<string, string>>(new Map());
  /** A word on what was just done, for the view it was done in (its address). */
  const [notice, setNotice] = useState<{ at: string; text: string } | null>(null);
  const [reads, setReads] = useState(0);

  const id = params.get('id');
  const creating = params.has('new');
  const editing = params.has('edit');

  const read = useCallback(async (signal?: AbortSignal) => {
    try {
      const data = await experimentsApi.list(signal);
      setLoad({ data: { experiments: data?.experiments ?? [], flows: data?.flows ?? [] }, error: null, unavailable: false });
    } catch (cause) {
      if (signal?.aborted) return;
      if (isUnavailable(cause)) setLoad({ data: null, error: null, unavailable: true });
      else setLoad((current) => ({ ...current, error: EXPERIMENTS_LOAD_FAILED }));
    }
  }, []);

  useEffect(() => {
    const controller = new AbortController();
    void read(controller.signal);
    return () => controller.abort();
  }, [read, reads]);

  // The list does not say how a running experiment stands: each one's own answer does.
  const running = (load.data?.experiments ?? []).filter((experiment) => experiment.status === 'running');
  const runningIds = running.map((experiment) => experiment.id).join(' ');
  const listShown = !creating && id === null;
  useEffect(() => {
    if (!listShown || runningIds === '') return undefined;
    const controller = new AbortController();
    for (const each of runningIds.split(' ')) {
      experimentsApi
        .get(each, controller.signal)
        .then((answer) => {
          const sentence = answer?.analysis?.status;
          if (sentence) setSentences((current) => new Map(current).set(each, sentence));
        })
        .catch(() => undefined);
    }
    return () => controller.abort();
  }, [runningIds, listShown]);

  const go = useCallback(
    (next: Record<string, string>) => {
      setParams(new URLSearchParams(next), { preventScrollReset: false });
    },
    [setParams],
  );

  if (load.unavailable) return <Unavailable title="Experiments" titleId={TITLE_ID} />;

  const data = load.data;
  return (
    <div className="admin-page flows-page experiments-page">
      <section className="card admin-section" aria-labelledby={TITLE_ID}>
        <div className="admin-section__head">
          <h1 id={TITLE_ID} className="page-title">
            Experiments
          </h1>
          <nav className="admin-section__actions admin-pages" aria-label="Admin pages">
            {!listShown && (
              <Link to="/admin/experiments" className="admin-link">
                All experiments
              </Link>
            )}
            <Link to="/admin/flows" className="admin-link">
              Flows
            </Link>
            <Link to="/admin" className="admin-link">
              Back to the dashboard
            </Link>
          </nav>
        </div>
        <p className="admin-section__note admin-section__note--first">
          Try flow versions and offers against each other: each visitor of the experiment’s funnel (or of its campaigns
          and keywords) is put in one arm by chance and keeps it. When an arm wins, promote it: its flow version and offer
          are then routed for those visitors.
        </p>
        {notice && notice.at === params.toString() && (
          <p className="ops-done" role="status">
            {notice.text}
          </p>
        )}
        {load.error && (
          <LoadFailed error={load.error} onRetry={() => setReads((current) => current + 1)} />
        )}
      </section>

      {data === null ? (
        !load.error && (
          <p className="admin-loading" role="status">
            <span className="spinner" aria-hidden="true" /> Loading the experiments...
          </p>
        )
      ) : creating ? (
        <ExperimentEditor
          experiment={null}
          flows={data.flows}
          onSaved={(saved) => {
            setNotice({
              at: new URLSearchParams({ id: saved.id }).toString(),
              text: `The draft “${saved.name}” is saved. Start it when it is ready.`,
            });
            go({ id: saved.id });
            setReads((current) => current + 1);
          }}
          onCancel={() => go({})}
        />
      ) : id !== null ? (
        <ExperimentDetail
          key={id}
          id={id}
          flows={data.flows}
          editing={editing}
          onEdit={(open) => go(open ? { id, edit: '' } : { id })}
          onChanged={() => {
            // The detail says what was done now; the page's word on the draft saved is old.
            setNotice(null);
            setReads((current) => current + 1);
          }}
        />
      ) : (
        <Section
          id="exp-list-title"
          title="All experiments"
          actions={
            <Button
              variant="secondary"
              onClick={() => go({ new: '' })}
            >
              New experiment
            </Button>
          }
        >
          <ExperimentTable experiments={data.experiments} sentences={sentences} />
        </Section>
      )}
    </div>
  );
}
