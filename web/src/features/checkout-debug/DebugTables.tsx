import { useId, type ReactNode } from 'react';
import { Button } from '../../components/Button';
import type { DebugCheckout, DebugSubscriptionCheck, DebugUser, DebugWebhookEvent } from './api';
import { formatText, formatTimestamp, formatYesNo } from './format';

function Timestamp({ value }: { value: string | null }) {
  return value ? <time dateTime={value}>{formatTimestamp(value)}</time> : <>{formatTimestamp(value)}</>;
}

/** An id: monospace, and selectable in one go for copying. */
function Id({ value }: { value: string | null }) {
  return value ? <code className="debug-table__id">{value}</code> : <>{formatText(value)}</>;
}

/**
 * A table that scrolls sideways inside its own box, so that the page does not on a phone. The box
 * is a labelled, focusable region, so keyboard users can scroll it too.
 */
function DebugTable({
  title,
  headers,
  empty,
  count,
  children,
}: {
  title: string;
  headers: string[];
  empty: string;
  count: number;
  children: ReactNode;
}) {
  const titleId = useId();
  return (
    <div className="debug-section">
      <h2 id={titleId} className="debug-section__title">
        {title} <span className="debug-section__count">({count})</span>
      </h2>
      <div className="debug-table" role="region" aria-labelledby={titleId} tabIndex={0}>
        <table>
          <thead>
            <tr>
              {headers.map((header) => (
                <th key={header} scope="col">
                  {header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {count === 0 ? (
              <tr>
                <td colSpan={headers.length} className="debug-table__empty">
                  {empty}
                </td>
              </tr>
            ) : (
              children
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}

export function CheckoutsTable({
  checkouts,
  onPick,
}: {
  checkouts: DebugCheckout[];
  onPick: (checkout: DebugCheckout) => void;
}) {
  return (
    <DebugTable
      title="Recent checkouts"
      headers={['Simulate', 'Payment session', 'Session', 'Status', 'Email', 'Source', 'Provider', 'Fee', 'User',
        'Created', 'Completed', 'Fulfilled']}
      empty="No checkouts yet."
      count={checkouts.length}
    >
      {checkouts.map((checkout) => (
        <tr key={checkout.paymentSessionId}>
          <td>
            <Button
              variant="secondary"
              className="debug-table__pick"
              aria-label={`Use checkout ${checkout.paymentSessionId} for the webhook simulation`}
              onClick={() => onPick(checkout)}
            >
              Use
            </Button>
          </td>
          <td>
            <Id value={checkout.paymentSessionId} />
          </td>
          <td>
            <Id value={checkout.sessionId} />
          </td>
          <td>{checkout.status}</td>
          <td>{formatText(checkout.email)}</td>
          <td>{formatText(checkout.source)}</td>
          <td>{checkout.provider}</td>
          <td>{checkout.refundableFee ? 'Refundable fee' : 'None'}</td>
          <td>
            <Id value={checkout.userId} />
          </td>
          <td>
            <Timestamp value={checkout.createdAt} />
          </td>
          <td>
            <Timestamp value={checkout.completedAt} />
          </td>
          <td>
            <Timestamp value={checkout.fulfilledAt} />
          </td>
        </tr>
      ))}
    </DebugTable>
  );
}

export function UsersTable({ users }: { users: DebugUser[] }) {
  return (
    <DebugTable
      title="Users"
      headers={['Email', 'User ID', 'Created', 'Password', 'Trial started', 'Trial ends', 'Checkout session',
        'Payment session', 'Subscription']}
      empty="No users yet."
      count={users.length}
    >
      {users.map((user) => (
        <tr key={user.id}>
          <td>{user.email}</td>
          <td>
            <Id value={user.id} />
          </td>
          <td>
            <Timestamp value={user.createdAt} />
          </td>
          <td>{formatYesNo(user.hasPassword)}</td>
          <td>{formatYesNo(user.trialStarted)}</td>
          <td>
            <Timestamp value={user.trialEndDate} />
          </td>
          <td>
            <Id value={user.checkoutSessionId} />
          </td>
          <td>
            <Id value={user.paymentSessionId} />
          </td>
          <td>
            <Id value={user.subscriptionId} />
          </td>
        </tr>
      ))}
    </DebugTable>
  );
}

export function WebhookEventsTable({ events }: { events: DebugWebhookEvent[] }) {
  return (
    <DebugTable
      title="Webhook events (last hour)"
      headers={['Received', 'Event ID', 'Type', 'Source', 'Processed', 'Outcome']}
      empty="No webhook events in the last hour."
      count={events.length}
    >
      {events.map((event) => (
        <tr key={event.eventId}>
          <td>
            <Timestamp value={event.receivedAt} />
          </td>
          <td>
            <Id value={event.eventId} />
          </td>
          <td>{event.eventType}</td>
          <td>{event.source}</td>
          <td>
            <Timestamp value={event.processedAt} />
          </td>
          <td>{formatText(event.outcome)}</td>
        </tr>
      ))}
    </DebugTable>
  );
}

/** The spec's `webhook_debug`: each subscription check a member's page made, kept 30 days. */
export function SubscriptionChecksTable({ checks }: { checks: DebugSubscriptionCheck[] }) {
  return (
    <DebugTable
      title="Subscription checks (webhook_debug)"
      headers={['Checked', 'Email', 'Session ID', 'Payment session ID', 'Origin', 'Path', 'User agent']}
      empty="No subscription checks yet."
      count={checks.length}
    >
      {checks.map((check) => (
        <tr key={`${check.checkedAt} ${check.email ?? ''}`}>
          <td>
            <Timestamp value={check.checkedAt} />
          </td>
          <td>{formatText(check.email)}</td>
          <td>
            <Id value={check.sessionId} />
          </td>
          <td>
            <Id value={check.paymentSessionId} />
          </td>
          <td>{formatText(check.origin)}</td>
          <td>{formatText(check.pathname)}</td>
          <td>{formatText(check.userAgent)}</td>
        </tr>
      ))}
    </DebugTable>
  );
}
