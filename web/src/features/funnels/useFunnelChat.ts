import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import { browserLocation, CHECKOUT_FALLBACK_URL } from '../../lib/browser';
import type { CampaignParams } from '../../lib/campaign-params';
import { chatReducer, INITIAL_CHAT_STATE } from './chat-state';
import { connectFunnel, type FunnelSocket } from './chat-socket';
import type { ChatFunnelKind } from './headline';
import { record } from '../../lib/json';

export const SEND_ACK_TIMEOUT_MS = 10_000;
/** Shorter than the safety time-out, so a silent server still gets its own fallback first. */
export const CHECKOUT_ACK_TIMEOUT_MS = 8_000;
/** The spec's chat-funnel checkout safety: 10 s, then a 2 s follow-up. */
export const CHECKOUT_SAFETY_MS = 10_000;
export const CHECKOUT_FOLLOW_UP_MS = 2_000;

export const SEND_TIMEOUT_TEXT =
  "We couldn't send your message. Please check your internet connection and try again.";
export const SEND_FAILED_TEXT = "Sorry, your message couldn't be sent. Please try again.";
export const CONNECTION_CLOSED_TEXT = 'The chat was disconnected.';
export const SERVICE_TROUBLE_TEXT = 'Our chat service is having trouble right now. Please try again in a moment.';

/** Whole seconds until `at` (a `Date.now()` time), counted down once a second; null without one. */
export function useSecondsLeft(at: number | null): number | null {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (at === null) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [at]);
  return at === null ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/** A path on this site, or an http(s) address: never a `javascript:` or other scheme. */
function checkoutUrl(value: unknown): string | null {
  const url = record(value).url;
  if (typeof url !== 'string') return null;
  if (url.startsWith('/') && !url.startsWith('//')) return url;
  return /^https?:\/\//i.test(url) ? url : null;
}

/**
 * The chat funnel's connection: the conversation as the server tells it, sending with an ack,
 * and the checkout with its safety net. The socket lives as long as the page (or its parameters).
 * A preview (`preview`: its id) never leaves the page: where the checkout would open,
 * `previewCheckout` becomes true instead, and no safety timer runs.
 */
export function useFunnelChat(funnel: ChatFunnelKind, params: CampaignParams, preview: string | null = null) {
  const [state, dispatch] = useReducer(chatReducer, INITIAL_CHAT_STATE);
  const [sending, setSending] = useState(false);
  const [sendError, setSendError] = useState<string | null>(null);
  const [checkoutBusy, setCheckoutBusy] = useState(false);
  // When the server will open the checkout by itself (its `countdown` event), on this clock.
  const [autoCheckoutAt, setAutoCheckoutAt] = useState<number | null>(null);
  // A preview's checkout: where a visitor would have left for it.
  const [previewCheckout, setPreviewCheckout] = useState(false);

  const socketRef = useRef<FunnelSocket | null>(null);
  // Read by the callbacks, which must not wait for a render to see a send or checkout start.
  const stateRef = useRef(state);
  stateRef.current = state;
  const sendingRef = useRef(false);
  const checkoutStarted = useRef(false);
  const destinationChosen = useRef(false);
  const safetyTimers = useRef<ReturnType<typeof setTimeout>[]>([]);

  const leaveFor = useCallback(
    (url: string) => {
      if (destinationChosen.current) return;
      destinationChosen.current = true;
      if (preview) setPreviewCheckout(true);
      else browserLocation.assign(url);
    },
    [preview],
  );

  // Once checkout starts, a page still here after 10 s (and again 2 s later) goes to the fallback.
  const beginCheckout = useCallback(() => {
    checkoutStarted.current = true;
    setCheckoutBusy(true);
    if (preview || safetyTimers.current.length > 0) return;
    safetyTimers.current.push(
      setTimeout(() => {
        browserLocation.assign(CHECKOUT_FALLBACK_URL);
        safetyTimers.current.push(
          setTimeout(() => browserLocation.assign(CHECKOUT_FALLBACK_URL), CHECKOUT_FOLLOW_UP_MS),
        );
      }, CHECKOUT_SAFETY_MS),
    );
  }, [preview]);

  useEffect(
    () => () => {
      safetyTimers.current.forEach(clearTimeout);
      safetyTimers.current = [];
    },
    [],
  );

  // Back from the checkout with the browser's Back button, a page restored from the back/forward
  // cache would still think it is leaving (and its safety timers would send it off again): load
  // it afresh instead; the conversation comes back from the server.
  useEffect(() => {
    const onPageShow = (event: PageTransitionEvent) => {
      if (event.persisted) window.location.reload();
    };
    window.addEventListener('pageshow', onPageShow);
    return () => window.removeEventListener('pageshow', onPageShow);
  }, []);

  // A new object with the same parameters must not open a new connection.
  const paramsKey = JSON.stringify(params);

  useEffect(() => {
    const socket = connectFunnel(funnel, JSON.parse(paramsKey) as CampaignParams, preview);
    socketRef.current = socket;

    socket.on('connect', () => dispatch({ type: 'connected' }));
    // `active` says whether socket.io-client will try again by itself.
    socket.on('disconnect', (reason) => {
      if (socket.active) dispatch({ type: 'reconnecting' });
      else if (reason !== 'io client disconnect') dispatch({ type: 'closed', reason: CONNECTION_CLOSED_TEXT });
    });
    socket.on('connect_error', (error) => {
      if (socket.active) dispatch({ type: 'reconnecting' });
      else dispatch({ type: 'closed', reason: error.message || CONNECTION_CLOSED_TEXT });
    });
    socket.on('conversation', (conversation) => dispatch({ type: 'conversation', conversation }));
    socket.on('typing', (typing) => dispatch({ type: 'typing', active: record(typing).active === true }));
    socket.on('message', (message) => dispatch({ type: 'message', message }));
    socket.on('notice', (notice) => {
      const text = record(notice).text;
      dispatch({ type: 'notice', text: typeof text === 'string' && text !== '' ? text : SERVICE_TROUBLE_TEXT });
    });
    socket.on('countdown', (countdown) => {
      const left = record(countdown).checkoutInMs;
      if (typeof left === 'number' && Number.isFinite(left)) setAutoCheckoutAt(Date.now() + Math.max(0, left));
    });
    socket.on('checkout', (checkout) => {
      beginCheckout();
      leaveFor(checkoutUrl(checkout) ?? CHECKOUT_FALLBACK_URL);
    });

    return () => {
      socket.disconnect();
      if (socketRef.current === socket) socketRef.current = null;
    };
  }, [funnel, paramsKey, preview, beginCheckout, leaveFor]);

  /** Resolves true once the server has stored the message. */
  const send = useCallback(async (text: string): Promise<boolean> => {
    const socket = socketRef.current;
    const trimmed = text.trim();
    const current = stateRef.current;
    if (!socket || trimmed === '' || current.final || current.awaitingReply || sendingRef.current) return false;

    sendingRef.current = true;
    setSending(true);
    setSendError(null);
    try {
      const reply: unknown = await socket.timeout(SEND_ACK_TIMEOUT_MS).emitWithAck('send', { text: trimmed });
      const answer = record(reply);
      if (answer.ok === true) {
        dispatch({ type: 'sent', text: trimmed });
        return true;
      }
      setSendError(typeof answer.error === 'string' && answer.error !== '' ? answer.error : SEND_FAILED_TEXT);
      return false;
    } catch {
      setSendError(SEND_TIMEOUT_TEXT);
      // The server may have stored it after all: a fresh connection brings the conversation as
      // the server has it, so the page shows what was kept.
      socket.disconnect().connect();
      return false;
    } finally {
      sendingRef.current = false;
      setSending(false);
    }
  }, []);

  /** The 'Get started >>' button. Every failure takes the spec's silent fallback. */
  const startCheckout = useCallback(async () => {
    const socket = socketRef.current;
    if (!socket || checkoutStarted.current) return;
    beginCheckout();
    try {
      const reply: unknown = await socket.timeout(CHECKOUT_ACK_TIMEOUT_MS).emitWithAck('checkout', {});
      leaveFor(checkoutUrl(reply) ?? CHECKOUT_FALLBACK_URL);
    } catch {
      leaveFor(CHECKOUT_FALLBACK_URL);
    }
  }, [beginCheckout, leaveFor]);

  /** After the server refused or ended the connection; socket.io-client does not retry then. */
  const reconnect = useCallback(() => {
    const socket = socketRef.current;
    if (!socket) return;
    dispatch({ type: 'reconnecting' });
    socket.connect();
  }, []);

  return {
    state,
    /** A message is on its way or waits for its answer: the Send button reads '...'. */
    busy: sending || state.awaitingReply,
    sendError,
    checkoutBusy,
    /** Seconds until the automatic checkout, while the server counts down; else null. */
    autoCheckoutAt,
    /** A preview reached its checkout (and stayed on the page). */
    previewCheckout,
    send,
    startCheckout,
    reconnect,
  };
}
