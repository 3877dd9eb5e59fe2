import { useEffect, useRef, useState } from 'react';
import { Button } from '../../../components/Button';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { countOf, formatMoment } from '../operations-format';
import {
  failureOf,
  flowsApi,
  OFFER_NAMES,
  type Offer,
  type Problem,
  type PublishedRouting,
  type Routing,
} from './flows-api';
import { MessageLine, Section, type Message } from './parts';
import { problemsByField } from './script-form';

export const ROUTING_NOTHING_PUBLISHED =
  'Nothing was published: the routing has problems. Each is marked at its field.';
export const ROUTING_MOVED =
  'Someone published the routing while you were editing, so nothing was published. Reload to see theirs, then make your change again.';
export const ROUTING_FAILED = 'The routing could not be published. Please try again.';

type Kind = 'campaigns' | 'keywords';
type Route = { id: number; key: string; flow: string };

/** A route's key as it is sent: a campaign id as typed, a keyword's words in lower case. */
export function routeKey(kind: Kind, key: string): string {
  const trimmed = key.trim();
  return kind === 'keywords' ? trimmed.toLowerCase().replace(/\s+/g, ' ') : trimmed;
}

let nextRouteId = 1;
function routesOf(map: Record<string, string>): Route[] {
  return Object.entries(map).map(([key, flow]) => ({ id: nextRouteId++, key, flow }));
}

const WORDS = {
  campaigns: { one: 'campaign', key: 'Campaign id', empty: 'Enter the campaign id.', add: 'Add a campaign' },
  keywords: { one: 'keyword', key: 'Keyword', empty: 'Enter the keyword’s words.', add: 'Add a keyword' },
} as const;

/**
 * Which flow a new conversation gets: by its campaign id, else by its keyword's words, else the
 * keyword flow (when the ad has a keyword), else the default flow. Published as a whole, as a new
 * version, behind a confirmation.
 */
export function RoutingEditor({
  routing,
  flows,
  notice,
  onPublished,
  onReload,
}: {
  routing: PublishedRouting;
  /** The published flows' names: the flows a route may choose. */
  flows: string[];
  notice: string | null;
  onPublished: (text: string) => Promise<void>;
  onReload: () => Promise<void>;
}) {
  const [defaultFlow, setDefaultFlow] = useState(routing.defaultFlow);
  const [keywordFlow, setKeywordFlow] = useState(routing.keywordFlow ?? '');
  const [routes, setRoutes] = useState<Record<Kind, Route[]>>(() => ({
    campaigns: routesOf(routing.campaigns),
    keywords: routesOf(routing.keywords),
  }));
  const [problems, setProblems] = useState<Problem[]>([]);
  const [message, setMessage] = useState<(Message & { reload?: boolean }) | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [dialogError, setDialogError] = useState<string | null>(null);
  const messageRef = useRef<HTMLDivElement>(null);

  // A failure takes the focus from the dialog that closed: the keyboard is where it says what to do.
  useEffect(() => {
    if (message && !message.ok) messageRef.current?.focus();
  }, [message]);

  const wanted: Routing = {
    defaultFlow,
    keywordFlow: keywordFlow === '' ? null : keywordFlow,
    campaigns: Object.fromEntries(routes.campaigns.map((route) => [routeKey('campaigns', route.key), route.flow])),
    keywords: Object.fromEntries(routes.keywords.map((route) => [routeKey('keywords', route.key), route.flow])),
    // Not edited here: an experiment's promoted offers go back as they came.
    ...(routing.offers ? { offers: routing.offers } : {}),
  };
  const changed = JSON.stringify(sorted(wanted)) !== JSON.stringify(sorted(routing));
  const serverProblems = problemsByField(problems);

  /** The problems of a route: an empty or repeated key here, the server's by its key. */
  function routeProblems(kind: Kind, route: Route): string[] {
    const key = routeKey(kind, route.key);
    if (key === '') return [WORDS[kind].empty];
    const twice = routes[kind].filter((other) => routeKey(kind, other.key) === key).length > 1;
    const local = twice ? [`${kind === 'campaigns' ? 'Campaign' : 'Keyword'} “${key}” is listed twice.`] : [];
    return [...local, ...(serverProblems.get(`${kind}.${key}`) ?? [])];
  }

  const localProblems = (['campaigns', 'keywords'] as const).some((kind) =>
    routes[kind].some((route) => {
      const key = routeKey(kind, route.key);
      return key === '' || routes[kind].filter((other) => routeKey(kind, other.key) === key).length > 1;
    }),
  );

  function change(kind: Kind, id: number, part: Partial<Route>) {
    setRoutes((current) => ({
      ...current,
      [kind]: current[kind].map((route) => (route.id === id ? { ...route, ...part } : route)),
    }));
  }

  function add(kind: Kind) {
    setRoutes((current) => ({ ...current, [kind]: [...current[kind], { id: nextRouteId++, key: '', flow: defaultFlow }] }));
  }

  function remove(kind: Kind, id: number) {
    setRoutes((current) => ({ ...current, [kind]: current[kind].filter((route) => route.id !== id) }));
  }

  async function publish() {
    if (busy) return;
    setBusy(true);
    setDialogError(null);
    try {
      const { version } = await flowsApi.publishRouting(wanted, routing.version);
      setConfirming(false);
      await onPublished(
        `Routing version ${version} is published. New conversations are routed this way within 2 seconds.`,
      );
    } catch (cause) {
      const failure = failureOf(cause);
      if (failure.status === 422) {
        setConfirming(false);
        setProblems(failure.problems);
        setMessage({ ok: false, text: ROUTING_NOTHING_PUBLISHED });
      } else if (failure.status === 409) {
        setConfirming(false);
        setMessage({ ok: false, text: ROUTING_MOVED, reload: true });
      } else setDialogError(ROUTING_FAILED);
    } finally {
      setBusy(false);
    }
  }

  const flowOptions = (current: string) =>
    [...new Set([...flows, current].filter(Boolean))].map((name) => (
      <option key={name} value={name}>
        {name}
      </option>
    ));

  function routeRows(kind: Kind) {
    const words = WORDS[kind];
    return (
      <fieldset className="flows-routes">
        <legend className="flows-subtitle">{kind === 'campaigns' ? 'By campaign' : 'By keyword'}</legend>
        <p className="flows-hint">
          {kind === 'campaigns'
            ? 'The campaign id of the ad’s address (campaignid), as Google Ads gives it. A campaign route comes first.'
            : 'A keyword route matches an ad whose keyword holds these words, in any case and order.'}
        </p>
        {routes[kind].length === 0 && <p className="admin-none">No {words.one} routes.</p>}
        {routes[kind].map((route, index) => {
          const key = routeKey(kind, route.key);
          const found = routeProblems(kind, route);
          const problemId = `flows-route-${kind}-${route.id}-problem`;
          const name = key === '' ? `${words.one} route ${index + 1}` : `${words.one} ${key}`;
          return (
            <div
              key={route.id}
              className="flows-route"
              role="group"
              aria-label={`${kind === 'campaigns' ? 'Campaign' : 'Keyword'} route ${index + 1}`}
              data-testid={`flows-route-${kind}`}
            >
              <label className="admin-field flows-route__key">
                <span className="admin-field__label">{words.key}</span>
                <input
                  className="admin-field__control"
                  value={route.key}
                  onChange={(event) => change(kind, route.id, { key: event.target.value })}
                  aria-invalid={found.length > 0 ? true : undefined}
                  aria-describedby={found.length > 0 ? problemId : undefined}
                />
              </label>
              <label className="admin-field flows-route__flow">
                <span className="admin-field__label">Flow</span>
                <select
                  className="admin-field__control"
                  value={route.flow}
                  onChange={(event) => change(kind, route.id, { flow: event.target.value })}
                >
                  {flowOptions(route.flow)}
                </select>
              </label>
              <Button variant="secondary" aria-label={`Remove ${name}`} onClick={() => remove(kind, route.id)}>
                Remove
              </Button>
              {found.length > 0 && (
                <p id={problemId} className="form__error flows-problem flows-route__problem">
                  {found.join(' ')}
                </p>
              )}
            </div>
          );
        })}
        <Button variant="secondary" onClick={() => add(kind)}>
          {words.add}
        </Button>
      </fieldset>
    );
  }

  const defaultProblems = serverProblems.get('defaultFlow');
  const keywordProblems = serverProblems.get('keywordFlow');

  return (
    <Section id="flows-routing-title" title="Routing">
      <p className="admin-section__note admin-section__note--first flows-state" data-testid="flows-routing-state">
        Version {routing.version}, published {formatMoment(routing.publishedAt)} by {routing.publishedBy}. A new
        conversation gets the flow of its campaign, else of its keyword, else the keyword flow when its ad has a
        keyword, else the default flow.
      </p>
      {notice && (
        <p className="ops-done" role="status">
          {notice}
        </p>
      )}
      <div className="admin-filters flows-routing__main">
        <div className="admin-field">
          <label className="admin-field__label" htmlFor="flows-routing-default">
            Default flow
          </label>
          <select
            id="flows-routing-default"
            className="admin-field__control"
            value={defaultFlow}
            onChange={(event) => setDefaultFlow(event.target.value)}
            aria-invalid={defaultProblems ? true : undefined}
            aria-describedby={defaultProblems ? 'flows-routing-default-problem' : undefined}
          >
            {flowOptions(defaultFlow)}
          </select>
          {defaultProblems && (
            <p id="flows-routing-default-problem" className="form__error flows-problem">
              {defaultProblems.join(' ')}
            </p>
          )}
        </div>
        <div className="admin-field">
          <label className="admin-field__label" htmlFor="flows-routing-keyword-flow">
            Keyword flow
          </label>
          <select
            id="flows-routing-keyword-flow"
            className="admin-field__control"
            value={keywordFlow}
            onChange={(event) => setKeywordFlow(event.target.value)}
            aria-invalid={keywordProblems ? true : undefined}
            aria-describedby={keywordProblems ? 'flows-routing-keyword-flow-problem' : undefined}
          >
            <option value="">None</option>
            {flowOptions(keywordFlow)}
          </select>
          {keywordProblems && (
            <p id="flows-routing-keyword-flow-problem" className="form__error flows-problem">
              {keywordProblems.join(' ')}
            </p>
          )}
        </div>
      </div>
      {routeRows('campaigns')}
      {routeRows('keywords')}
      <OfferRoutes offers={routing.offers ?? {}} />
      <div className="flows-actions">
        <Button
          disabled={busy || !changed || localProblems}
          onClick={() => {
            setDialogError(null);
            setMessage(null);
            setConfirming(true);
          }}
        >
          Publish routing
        </Button>
        {changed && <strong className="flows-unsaved">Unpublished changes.</strong>}
      </div>
      <MessageLine ref={messageRef} message={message} testId="flows-routing-message">
        {message?.reload && (
          <Button variant="secondary" onClick={() => void onReload()}>
            Reload
          </Button>
        )}
      </MessageLine>
      {confirming && (
        <ConfirmDialog
          title={`Publish routing version ${routing.version + 1}`}
          confirmLabel="Publish routing"
          busyLabel="Publishing..."
          cancelLabel="Keep editing"
          busy={busy}
          error={dialogError}
          onConfirm={() => void publish()}
          onCancel={() => setConfirming(false)}
        >
          New conversations are routed this way within 2 seconds: default flow “{defaultFlow}”, keyword flow{' '}
          {keywordFlow ? `“${keywordFlow}”` : 'none'}, {countOf(routes.campaigns.length, 'campaign')} and{' '}
          {countOf(routes.keywords.length, 'keyword')}. Conversations under way keep their flow.
        </ConfirmDialog>
      )}
    </Section>
  );
}

/** "Campaign 123 → refundable-fee chat (/Chat-Help-2)". */
export function offerRouteText(campaign: string, offer: Offer): string {
  const name = OFFER_NAMES[offer] ?? offer;
  return `Campaign ${campaign} → ${name.charAt(0).toLowerCase()}${name.slice(1)}`;
}

/**
 * The funnel some campaigns' visitors meet wherever the ad sends them: set when an experiment's
 * winning offer is promoted, read-only here (a publish keeps them).
 */
function OfferRoutes({ offers }: { offers: Record<string, Offer> }) {
  const entries = Object.entries(offers).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return null;
  return (
    <div className="flows-routes" data-testid="flows-offer-routes">
      <h3 className="flows-subtitle">Offers by campaign</h3>
      <p className="flows-hint">
        Set when an experiment’s winning offer was promoted: these campaigns’ visitors meet this funnel wherever the
        ad sends them. Publishing the routing keeps them as they are.
      </p>
      <ul>
        {entries.map(([campaign, offer]) => (
          <li key={campaign}>{offerRouteText(campaign, offer)}</li>
        ))}
      </ul>
    </div>
  );
}

/** A routing with its maps' keys in order, to compare two. */
function sorted(routing: Routing): Routing {
  const order = (map: Record<string, string>) =>
    Object.fromEntries(Object.entries(map).sort(([a], [b]) => a.localeCompare(b)));
  return {
    defaultFlow: routing.defaultFlow,
    keywordFlow: routing.keywordFlow ?? null,
    campaigns: order(routing.campaigns),
    keywords: order(routing.keywords),
  };
}
