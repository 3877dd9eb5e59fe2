import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { LoadFailed, Unavailable } from '../sections';
import { Dropoff } from './Dropoff';
import { readDropoff, writeDropoff } from './dropoff-model';
import { FlowEditor } from './FlowEditor';
import { FlowHistory } from './FlowHistory';
import { FlowList } from './FlowList';
import { flowsApi, isUnavailable, type DropoffQuery, type FlowsOverview } from './flows-api';
import { FlowVersions } from './FlowVersions';
import { RoutingEditor } from './RoutingEditor';
import { fieldLabels } from './script-form';
import '../admin.css';
import '../operations.css';
import './flows.css';

const TITLE_ID = 'admin-flows-title';
/** As the dashboard says it. */
export const FLOWS_LOAD_FAILED = 'The flows could not be loaded. Please try again.';

type Load = { data: FlowsOverview | null; error: string | null; unavailable: boolean };

/**
 * `/admin/flows`: the funnels' scripted flows as versioned data. The flows and the routing; the
 * chosen flow's draft with its changes from the published version, tried in a real chat and
 * published behind a confirmation; its versions, to read or roll back to; every publish; and the
 * drop-off at each step by version. The server decides who may see it (404 to anyone but an
 * admin). The flow edited (`edit`) and the drop-off's filters are in the address.
 */
export function FlowsPage() {
  const [params, setParams] = useSearchParams();
  const [load, setLoad] = useState<Load>({ data: null, error: null, unavailable: false });
  /** Bumped to mount the editor afresh (after a publish, a discard, a new flow). */
  const [epoch, setEpoch] = useState(0);
  const [routingEpoch, setRoutingEpoch] = useState(0);
  const [historyVersion, setHistoryVersion] = useState(0);
  const [flowNotice, setFlowNotice] = useState<string | null>(null);
  const [routingNotice, setRoutingNotice] = useState<string | null>(null);
  const [dirty, setDirty] = useState(false);
  /** A flow chosen while the editor has unsaved changes: asked about first. */
  const [leavingFor, setLeavingFor] = useState<string | null>(null);

  const read = useCallback(async (signal?: AbortSignal): Promise<FlowsOverview | null> => {
    try {
      const data = await flowsApi.overview(signal);
      setLoad({ data, error: null, unavailable: false });
      return data;
    } catch (cause) {
      if (signal?.aborted) return null;
      if (isUnavailable(cause)) setLoad({ data: null, error: null, unavailable: true });
      else setLoad((current) => ({ ...current, error: FLOWS_LOAD_FAILED }));
      return null;
    }
  }, []);

  useEffect(() => {
    const controller = new AbortController();
    void read(controller.signal);
    return () => controller.abort();
  }, [read]);

  const refresh = useCallback(
    async (reset: boolean) => {
      const data = await read();
      if (reset) {
        setEpoch((current) => current + 1);
        setHistoryVersion((current) => current + 1);
      }
      return data;
    },
    [read],
  );

  const data = load.data;
  const flows = useMemo(() => data?.flows ?? [], [data]);
  const asked = params.get('edit');
  const chosen =
    flows.find((flow) => flow.name === asked) ??
    flows.find((flow) => flow.name === data?.routing.defaultFlow) ??
    flows[0] ??
    null;
  const published = flows.filter((flow) => flow.published !== null).map((flow) => flow.name);
  const labels = useMemo(() => (data ? fieldLabels(data.fields, data.bounds) : new Map<string, string>()), [data]);
  const dropoff = readDropoff(params);

  const choose = useCallback(
    (name: string) => {
      setFlowNotice(null);
      setParams(
        (current) => {
          const next = new URLSearchParams(current);
          next.set('edit', name);
          return next;
        },
        { preventScrollReset: true },
      );
    },
    [setParams],
  );

  const changeDropoff = useCallback(
    (change: Partial<DropoffQuery>) => {
      setParams((current) => writeDropoff(current, { ...readDropoff(current), ...change }), {
        preventScrollReset: true,
      });
    },
    [setParams],
  );

  if (load.unavailable) return <Unavailable title="Flows" titleId={TITLE_ID} />;

  return (
    <div className="admin-page flows-page">
      <section className="card admin-section" aria-labelledby={TITLE_ID}>
        <div className="admin-section__head">
          <h1 id={TITLE_ID} className="page-title">
            Flows
          </h1>
          <Link to="/admin" className="admin-link">
            Back to the dashboard
          </Link>
        </div>
        <p className="admin-section__note admin-section__note--first">
          The chat funnels’ words, their timing, and which visitors get which flow. Edit a draft, try it in a real chat,
          then publish it: new conversations get it within 2 seconds, and a conversation under way keeps the version it
          started with.
        </p>
        {load.error && (
          <LoadFailed error={load.error} onRetry={() => void read()} />
        )}
      </section>

      {data === null ? (
        !load.error && (
          <p className="admin-loading" role="status">
            <span className="spinner" aria-hidden="true" /> Loading the flows...
          </p>
        )
      ) : (
        <>
          <FlowList
            flows={flows}
            chosen={chosen?.name ?? null}
            onChoose={(name) => (dirty ? setLeavingFor(name) : choose(name))}
            onCreated={async (name, copyFrom) => {
              choose(name);
              setFlowNotice(`The flow “${name}” is created as a draft, copied from “${copyFrom}”. Publish it, then route visitors to it.`);
              await refresh(true);
            }}
          />
          {chosen && (
            <FlowEditor
              key={`${chosen.name}:${epoch}`}
              flow={chosen}
              overview={data}
              notice={flowNotice}
              onRefresh={refresh}
              onDone={setFlowNotice}
              onDirtyChange={setDirty}
            />
          )}
          {chosen && (
            <FlowVersions
              key={chosen.name}
              flow={chosen}
              overview={data}
              onRolledBack={async () => {
                setFlowNotice(null);
                await refresh(!dirty);
                setHistoryVersion((current) => current + 1);
              }}
            />
          )}
          <RoutingEditor
            key={`${data.routing.version}:${routingEpoch}`}
            routing={data.routing}
            flows={published}
            notice={routingNotice}
            onPublished={async (text) => {
              setRoutingNotice(text);
              await read();
              setRoutingEpoch((current) => current + 1);
              setHistoryVersion((current) => current + 1);
            }}
            onReload={async () => {
              const fresh = await read();
              setRoutingNotice(
                fresh ? `Reloaded: routing version ${fresh.routing.version} is the one published. Make your change again.` : null,
              );
              setRoutingEpoch((current) => current + 1);
            }}
          />
          <FlowHistory labels={labels} version={historyVersion} />
          <Dropoff query={dropoff} flows={flows.map((flow) => flow.name)} onChange={changeDropoff} />
        </>
      )}

      {leavingFor !== null && (
        <ConfirmDialog
          title="Leave your unsaved changes?"
          confirmLabel="Leave without saving"
          busyLabel="Leaving..."
          cancelLabel="Keep editing"
          busy={false}
          onConfirm={() => {
            const name = leavingFor;
            setLeavingFor(null);
            setDirty(false);
            choose(name);
          }}
          onCancel={() => setLeavingFor(null)}
        >
          The changes to “{chosen?.name}” since it was last saved are lost if you edit “{leavingFor}” now. Save the draft
          first to keep them.
        </ConfirmDialog>
      )}
    </div>
  );
}
