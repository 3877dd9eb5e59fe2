import { useCallback, useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';
import { Button } from '../../components/Button';
import { usePublicConfig } from '../../lib/public-config';
import { useSession } from '../../lib/session';
import { ApiError } from '../../lib/api';
import { checkoutDebugApi, type DebugCheckout, type DebugOverview } from './api';
import {
  CreateAccountForm,
  EMPTY_SIMULATION,
  ManualLoginForm,
  SendResetForm,
  SimulateWebhookForm,
  type SimulationDraft,
} from './DebugForms';
import { CheckoutsTable, SubscriptionChecksTable, UsersTable, WebhookEventsTable } from './DebugTables';
import { LOAD_FAILED, NOT_AVAILABLE, failureText } from './messages';

type Load = {
  data: DebugOverview | null;
  loading: boolean;
  /** The server said no (404, or 401): not an admin, or debug tools are off. */
  unavailable: boolean;
  error: string | null;
};

const TITLE_ID = 'checkout-debug-title';

function Unavailable() {
  return (
    <section className="card debug-unavailable" aria-labelledby={TITLE_ID}>
      <h1 id={TITLE_ID} className="page-title">
        Checkout Debug
      </h1>
      <p className="debug-unavailable__text">{NOT_AVAILABLE}</p>
      <p>
        <Link to="/" className="btn btn--primary">
          Return to Home
        </Link>
      </p>
    </section>
  );
}

function SignedInAs() {
  const { user } = useSession();
  if (user === undefined) return <p className="debug-bar__user">Checking who is signed in...</p>;
  if (user === null) return <p className="debug-bar__user">Not signed in.</p>;
  return (
    <p className="debug-bar__user">
      Signed in as <strong className="debug-bar__email">{user.email}</strong>
    </p>
  );
}

/**
 * `/admin/checkout-debug` (and `/checkout-debug`): developer tooling for admins with debug tools on. The server decides who
 * that is (its endpoints answer 404 to anyone else); this page only shows what it answers.
 */
export function CheckoutDebugPage() {
  const { debugTools } = usePublicConfig();
  const [load, setLoad] = useState<Load>({ data: null, loading: true, unavailable: false, error: null });
  const [version, setVersion] = useState(0);
  const [simulation, setSimulation] = useState<SimulationDraft>(EMPTY_SIMULATION);
  const reloadTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const simulationEmailRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    const controller = new AbortController();
    setLoad((current) => ({ ...current, loading: true }));
    checkoutDebugApi
      .overview(controller.signal)
      .then((data) => setLoad({ data, loading: false, unavailable: false, error: null }))
      .catch((cause) => {
        if (controller.signal.aborted) return;
        const refused = cause instanceof ApiError && (cause.status === 404 || cause.status === 401);
        setLoad((current) =>
          refused
            ? { data: null, loading: false, unavailable: true, error: null }
            : { ...current, loading: false, error: failureText(LOAD_FAILED, cause) },
        );
      });
    return () => controller.abort();
  }, [version]);

  useEffect(() => () => clearTimeout(reloadTimer.current), []);

  const refresh = useCallback(() => {
    clearTimeout(reloadTimer.current);
    setVersion((count) => count + 1);
  }, []);

  /** After an action that changed data: the spec's debug reload, replacing one already pending. */
  const reloadAfter = useCallback((delayMs: number) => {
    clearTimeout(reloadTimer.current);
    reloadTimer.current = setTimeout(() => setVersion((count) => count + 1), delayMs);
  }, []);

  function pickCheckout(checkout: DebugCheckout) {
    setSimulation((draft) => ({
      paymentSessionId: checkout.paymentSessionId,
      email: checkout.email ?? draft.email,
      picked: checkout,
    }));
    simulationEmailRef.current?.focus();
  }

  const answered = load.data !== null || load.error !== null || load.unavailable;
  // The public config reads false until the server's answer arrives, so it is consulted only once
  // the overview has answered too; an admin does not see a flash of 'not available'.
  if (load.unavailable || (answered && !debugTools)) return <Unavailable />;

  if (!answered) {
    return (
      <section className="card debug-page" aria-labelledby={TITLE_ID} aria-busy="true">
        <h1 id={TITLE_ID} className="page-title">
          Checkout Debug
        </h1>
        <p className="debug-page__loading" role="status">
          <span className="spinner" aria-hidden="true" /> Loading debug data...
        </p>
      </section>
    );
  }

  const { data } = load;
  return (
    <div className="debug-page">
      <section className="card debug-page__head" aria-labelledby={TITLE_ID}>
        <h1 id={TITLE_ID} className="page-title">
          Checkout Debug
        </h1>
        <p className="debug-page__lead">
          Developer tooling: recent checkouts, users and the last hour&apos;s webhook events, with manual actions.{' '}
          <Link to="/admin">Back to the dashboard</Link>
        </p>
        <div className="debug-bar">
          <SignedInAs />
          <Button variant="secondary" onClick={refresh} disabled={load.loading} aria-busy={load.loading}>
            {load.loading ? 'Refreshing...' : 'Refresh'}
          </Button>
        </div>
        {load.error && (
          <p className="form__error debug-page__error" role="alert">
            {load.error}
          </p>
        )}
      </section>

      {data && (
        <div className="card debug-page__data">
          <CheckoutsTable checkouts={data.checkouts} onPick={pickCheckout} />
          <UsersTable users={data.users} />
          <WebhookEventsTable events={data.webhookEvents} />
          <SubscriptionChecksTable checks={data.webhookDebug ?? []} />
        </div>
      )}

      <section className="card debug-page__actions" aria-labelledby="checkout-debug-actions-title">
        <h2 id="checkout-debug-actions-title" className="debug-section__title">
          Actions
        </h2>
        <div className="debug-actions">
          <ManualLoginForm />
          <CreateAccountForm onChanged={reloadAfter} />
          <SendResetForm />
          <SimulateWebhookForm
            draft={simulation}
            onDraftChange={setSimulation}
            emailRef={simulationEmailRef}
            onChanged={reloadAfter}
          />
        </div>
      </section>
    </div>
  );
}
