import { useEffect, useMemo, useRef, useState } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { usePublicConfig } from '../../lib/public-config';
import { Button } from '../../components/Button';
import { funnelsApi } from './api';
import { CAMPAIGN_KEYS, readCampaignParams, rememberCampaignParams, type CampaignParams } from '../../lib/campaign-params';
import { ChatComposer } from './ChatComposer';
import { ChatMessages } from './ChatMessages';
import { FunnelFooter } from './FunnelFooter';
import { chatHeadline, type ChatFunnelKind } from './headline';
import { PREVIEW_BANNER, PREVIEW_CHECKOUT, previewId } from './preview';
import { useFunnelChat, useSecondsLeft } from './useFunnelChat';
import './funnels.css';

type ChatFunnelPageProps = {
  funnel: ChatFunnelKind;
  /** The keyword when the query has none (/email-help is about email). */
  defaultKeyword?: string;
};

const VIEW_EVENT = { chat: 'chatbot_funnel_view', refundable: 'refundable_fee_funnel_view' } as const;

/**
 * /chat-help, /Chat-Help-2 and /email-help: a live chat with the assistant that ends in the
 * checkout. With `?preview=<id>` it is the operator's preview of a draft flow (preview.ts): the
 * same page, which counts nothing, keeps no campaign and stays where the checkout would open.
 */
export function ChatFunnelPage({ funnel, defaultKeyword }: ChatFunnelPageProps) {
  const { pathname, search } = useLocation();
  const navigate = useNavigate();
  const { productName, assistantName } = usePublicConfig();
  // Back from a canceled checkout: the conversation is still there (the server keeps it), and the
  // page says so once; the address loses `canceled` so a reload does not say it again.
  const [backFromCheckout] = useState(() => new URLSearchParams(search).get('canceled') === 'true');
  useEffect(() => {
    const query = new URLSearchParams(search);
    if (!query.has('canceled')) return;
    query.delete('canceled');
    const rest = query.toString();
    navigate({ pathname, search: rest ? `?${rest}` : '' }, { replace: true });
  }, [navigate, pathname, search]);

  const preview = useMemo(() => previewId(search), [search]);
  const queryParams = useMemo(() => readCampaignParams(search), [search]);
  const params = useMemo<CampaignParams>(
    () => (queryParams.keyword || !defaultKeyword ? queryParams : { ...queryParams, keyword: defaultKeyword }),
    [queryParams, defaultKeyword],
  );

  useEffect(() => {
    // A preview's keyword is the operator's test, not this browser's first campaign.
    if (!preview) rememberCampaignParams(queryParams);
  }, [queryParams, preview]);

  // One page view per visit of the page, whatever re-renders or strict-mode re-runs happen.
  const viewTracked = useRef(false);
  useEffect(() => {
    if (viewTracked.current || preview) return;
    viewTracked.current = true;
    // Every field of the ad's address (the dashboard breaks visitors down by each), none left out.
    const properties = Object.fromEntries(CAMPAIGN_KEYS.map((key) => [key, params[key] ?? null]));
    funnelsApi.trackView(VIEW_EVENT[funnel], properties, pathname).catch(() => {
      // Analytics never stands in the visitor's way.
    });
  }, [funnel, params, pathname, preview]);

  const chat = useFunnelChat(funnel, params, preview);
  const { state } = chat;
  const headline = state.headline ?? chatHeadline(funnel, params.keyword);
  const hasOffer = state.messages.some((message) => message.showSubscribeButton);
  const secondsLeft = useSecondsLeft(chat.checkoutBusy ? null : chat.autoCheckoutAt);

  return (
    <div className="chat-funnel">
      <section className="chat-funnel__hero" aria-labelledby="chat-funnel-headline">
        <h1 id="chat-funnel-headline" className="chat-funnel__headline">
          {headline}
        </h1>
        <p className="chat-funnel__lead">Ask your question below and get a clear answer in plain words.</p>
      </section>

      <section className="chat-window" aria-labelledby="chat-window-title">
        {preview && (
          <p className="chat-preview-banner" data-testid="preview-banner">
            {PREVIEW_BANNER}
          </p>
        )}
        <header className="chat-window__header">
          <h2 id="chat-window-title" className="chat-window__title">
            <span className="chat-window__online" aria-hidden="true" />
            {productName} Instant Online Help: Connected
          </h2>
          <div className="chat-window__assistant">
            <span className="chat-avatar" aria-hidden="true">
              {assistantName.charAt(0)}
            </span>
            <p className="chat-window__assistant-name">{assistantName}, Personal Chat Assistant</p>
          </div>
        </header>

        <ChatMessages
          messages={state.messages}
          assistantName={assistantName}
          typing={state.typing}
          loading={state.messages.length === 0 && !state.hasConnected}
          checkoutBusy={chat.checkoutBusy}
          onCheckout={() => void chat.startCheckout()}
        />

        <div className="chat-window__status">
          {backFromCheckout && (
            <p className="chat-status" role="status">
              Your checkout was canceled, and nothing was charged. Your conversation is still here.
            </p>
          )}
          {state.connection === 'reconnecting' && (
            <p className="chat-status" role="status">
              {state.hasConnected
                ? 'Connection lost. Reconnecting…'
                : 'We are having trouble connecting. Trying again…'}
            </p>
          )}
          {state.connection === 'closed' && (
            <div className="chat-status chat-status--error" role="alert">
              <p>{state.closedReason}</p>
              <Button variant="secondary" onClick={chat.reconnect}>
                Try again
              </Button>
            </div>
          )}
          {state.notice && (
            <p className="chat-status" role="status">
              {state.notice}
            </p>
          )}
          {chat.sendError && (
            <p className="chat-status chat-status--error" role="alert">
              {chat.sendError}
            </p>
          )}
          {chat.previewCheckout ? (
            <p className="chat-status" role="status">
              {PREVIEW_CHECKOUT}
            </p>
          ) : (
            chat.checkoutBusy && (
              <p className="chat-status" role="status">
                Taking you to the secure checkout…
              </p>
            )
          )}
          {state.final && hasOffer && !chat.checkoutBusy && (
            // No surprise: the page says when it will go, and the button goes now.
            <p className="chat-status chat-status--countdown" role="timer" aria-atomic="true">
              {secondsLeft !== null
                ? `Taking you to the secure checkout in ${secondsLeft} s. Press ‘Get started >>’ to go now.`
                : 'Press ‘Get started >>’ above to continue.'}
            </p>
          )}
        </div>

        <ChatComposer
          onSend={chat.send}
          busy={chat.busy}
          checkoutBusy={chat.checkoutBusy}
          finished={state.final}
        />
      </section>

      <FunnelFooter />
    </div>
  );
}
