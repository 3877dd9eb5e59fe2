import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { mockApi } from '../../../test/fetch-mock';
import { ExperimentEditor, NOT_DRAFT, NOTHING_SAVED } from './ExperimentEditor';
import type { Experiment } from './experiments-api';
import { experiment, FLOWS, requests } from './test-fixtures';

function renderEditor(draft: Experiment | null = null) {
  const onSaved = vi.fn<(saved: Experiment) => void>();
  const onCancel = vi.fn<() => void>();
  render(<ExperimentEditor experiment={draft} flows={FLOWS} onSaved={onSaved} onCancel={onCancel} />);
  return { onSaved, onCancel };
}

function input(label: string, within_: HTMLElement = document.body) {
  return within(within_).getByLabelText(label) as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
}

function arm(letter: string) {
  return screen.getByRole('group', { name: new RegExp(`^Arm ${letter}`) });
}

function described(element: HTMLElement): string {
  return (element.getAttribute('aria-describedby') ?? '')
    .split(' ')
    .map((id) => document.getElementById(id)?.textContent ?? '')
    .join(' | ');
}

describe('ExperimentEditor', () => {
  it('starts a new experiment with the defaults: A “Control” and B “Variant” half and half', () => {
    mockApi();
    renderEditor();
    expect(screen.getByRole('heading', { name: 'New experiment' })).toBeTruthy();
    expect(input('Experiment name').value).toBe('');
    expect(input('Funnel').value).toBe('chat');
    const control = arm('A');
    expect(control.getAttribute('aria-label')).toBe('Arm A (control)');
    expect(within(control).getByText('Control', { selector: '.flows-tag' })).toBeTruthy();
    expect(input('Name', control).value).toBe('Control');
    expect(input('Weight', control).value).toBe('50');
    expect(input('Name', arm('B')).value).toBe('Variant');
    expect(input('Flow version', arm('B')).value).toBe('');
    expect((input('Flow version', arm('B')) as HTMLSelectElement).selectedOptions[0].textContent).toBe('Routing’s choice');
    expect((input('Offer', arm('B')) as HTMLSelectElement).selectedOptions[0].textContent).toBe('Same funnel');
    expect(described(input('Weight', arm('B')))).toContain('50');
    expect(input('Metric').value).toBe('trial_paid');
    // The Goal section's dropdown is the metric: the section's name is not said twice.
    const goal = screen.getByRole('group', { name: 'Goal' });
    expect(within(goal).getByRole('combobox', { name: 'Metric' })).toBe(input('Metric'));
    expect(within(goal).queryByRole('combobox', { name: 'Goal' })).toBeNull();
    expect(input('Within (days)').value).toBe('14');
    expect(input('Min visitors per arm').value).toBe('1000');
    expect(input('Min days').value).toBe('7');
    expect(input('Chance to beat (%)').value).toBe('95');
    expect(input('Max expected loss (percentage points)').value).toBe('0.2');
    expect(input('Max refund rate (%)').value).toBe('');
    expect((screen.getByLabelText('Promote the winner automatically') as HTMLInputElement).checked).toBe(false);
    // No arm to remove below two.
    expect(screen.queryByRole('button', { name: /Remove arm/ })).toBeNull();
  });

  it('adds arms up to four, removes them, and sends the fields converted', async () => {
    const fetchMock = mockApi({ 'POST /api/admin/experiments': { status: 201, body: experiment({ status: 'draft' }) } });
    const { onSaved } = renderEditor();
    fireEvent.change(input('Experiment name'), { target: { value: '  Offer test ' } });
    fireEvent.change(input('Funnel'), { target: { value: 'refundable' } });
    fireEvent.change(input('Campaign ids'), { target: { value: '123, 456\n789' } });
    fireEvent.change(input('Keywords'), { target: { value: 'Printer  Help' } });

    fireEvent.click(screen.getByRole('button', { name: 'Add an arm' }));
    fireEvent.click(screen.getByRole('button', { name: 'Add an arm' }));
    expect(screen.getAllByTestId('exp-arm')).toHaveLength(4);
    expect(screen.queryByRole('button', { name: 'Add an arm' })).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Remove arm C' }));
    expect(screen.getAllByTestId('exp-arm')).toHaveLength(3);

    const b = arm('B');
    fireEvent.change(input('Flow version', b), { target: { value: 'default@3' } });
    fireEvent.change(input('Offer', b), { target: { value: 'help' } });
    fireEvent.change(input('Weight', b), { target: { value: '25' } });
    fireEvent.change(input('Weight', arm('C')), { target: { value: '25' } });
    expect(described(input('Weight', arm('A')))).toMatch(/50\s% of visitors/);
    expect(described(input('Weight', arm('C')))).toMatch(/25\s%/);

    fireEvent.change(input('Metric'), { target: { value: 'revenue' } });
    // The loss is now in dollars: the default follows the unit.
    expect(input('Max expected loss (dollars per visitor)').value).toBe('0.05');
    fireEvent.change(input('Max expected loss (dollars per visitor)'), { target: { value: '0.10' } });
    fireEvent.change(input('Within (days)'), { target: { value: '30' } });
    fireEvent.change(input('Max refund rate (%)'), { target: { value: '10' } });
    fireEvent.change(input('Max early-leave rate (%)'), { target: { value: '40' } });
    fireEvent.change(input('Chance to beat (%)'), { target: { value: '97.5' } });
    fireEvent.click(screen.getByLabelText('Promote the winner automatically'));
    fireEvent.click(screen.getByRole('button', { name: 'Create draft' }));

    await waitFor(() => expect(onSaved).toHaveBeenCalledTimes(1));
    expect(requests(fetchMock, 'POST', '/api/admin/experiments')).toEqual([
      {
        name: 'Offer test',
        scope: { funnel: 'refundable', campaigns: ['123', '456', '789'], keywords: ['printer help'] },
        arms: [
          { key: 'a', name: 'Control', flow: null, offer: null, weight: 50 },
          { key: 'b', name: 'Variant', flow: { name: 'default', version: 3 }, offer: 'help', weight: 25 },
          { key: 'c', name: 'Variant 3', flow: null, offer: null, weight: 25 },
        ],
        goal: { metric: 'revenue', days: 30 },
        guardrails: { maxRefundRate: 0.1, maxEarlyLeaveRate: 0.4 },
        rule: { minExposures: 1000, minDays: 7, chance: 0.975, maxLoss: 10 },
        autoPromote: true,
      },
    ]);
  });

  it('sends a loss in percentage points as a rate', async () => {
    const fetchMock = mockApi({ 'POST /api/admin/experiments': { status: 201, body: experiment({ status: 'draft' }) } });
    renderEditor();
    fireEvent.change(input('Experiment name'), { target: { value: 'Greeting' } });
    fireEvent.change(input('Max expected loss (percentage points)'), { target: { value: '0.5' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create draft' }));
    await waitFor(() => expect(requests(fetchMock, 'POST', '/api/admin/experiments')).toHaveLength(1));
    const [sent] = requests(fetchMock, 'POST', '/api/admin/experiments') as { rule: { maxLoss: number } }[];
    expect(sent.rule.maxLoss).toBe(0.005);
  });

  it('shows the server’s problems at their fields, and the others at the top', async () => {
    mockApi({
      'POST /api/admin/experiments': {
        status: 422,
        body: {
          error: 'invalid',
          message: 'The experiment has problems.',
          problems: [
            { field: 'name', message: 'Enter a name of 1 to 60 characters.' },
            { field: 'scope.campaigns', message: 'Campaign “abc” is not a campaign id.' },
            { field: 'arms.1.flow', message: 'default v9 is not a published version.' },
            { field: 'arms.1.weight', message: 'A weight is from 1 to 100.' },
            { field: 'goal.days', message: 'From 1 to 90 days.' },
            { field: 'rule.chance', message: 'From 50 % to 99.9 %.' },
            { field: 'scope', message: 'It overlaps the running experiment “Offer test”.' },
            { field: 'somethingElse', message: 'Something else is wrong.' },
          ],
        },
      },
    });
    renderEditor();
    fireEvent.click(screen.getByRole('button', { name: 'Create draft' }));

    const message = await screen.findByTestId('exp-editor-message');
    expect(message.textContent).toContain(NOTHING_SAVED);
    expect(within(screen.getByTestId('exp-editor-rest')).getAllByRole('listitem').map((item) => item.textContent)).toEqual([
      'Something else is wrong.',
    ]);
    await waitFor(() => expect(document.activeElement).toBe(message));

    const name = input('Experiment name');
    expect(name.getAttribute('aria-invalid')).toBe('true');
    expect(described(name)).toBe('Enter a name of 1 to 60 characters.');
    expect(described(input('Campaign ids'))).toContain('Campaign “abc” is not a campaign id.');
    const b = arm('B');
    expect(input('Flow version', b).getAttribute('aria-invalid')).toBe('true');
    expect(described(input('Flow version', b))).toBe('default v9 is not a published version.');
    expect(described(input('Weight', b))).toContain('A weight is from 1 to 100.');
    expect(input('Flow version', arm('A')).getAttribute('aria-invalid')).toBeNull();
    expect(described(input('Within (days)'))).toContain('From 1 to 90 days.');
    expect(described(input('Chance to beat (%)'))).toBe('From 50 % to 99.9 %.');
    expect(screen.getByText('It overlaps the running experiment “Offer test”.')).toBeTruthy();
  });

  it('marks what cannot be read without asking the server', async () => {
    const fetchMock = mockApi();
    renderEditor();
    fireEvent.change(input('Weight', arm('A')), { target: { value: 'half' } });
    fireEvent.change(input('Max refund rate (%)'), { target: { value: 'ten' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create draft' }));
    expect((await screen.findByTestId('exp-editor-message')).textContent).toContain(NOTHING_SAVED);
    expect(described(input('Weight', arm('A')))).toContain('Enter a whole number from 1 to 100.');
    expect(input('Max refund rate (%)').getAttribute('aria-invalid')).toBe('true');
    expect(requests(fetchMock, 'POST', '/api/admin/experiments')).toEqual([]);
  });

  it('edits a draft with its own values, and says so when it is no longer a draft', async () => {
    const fetchMock = mockApi({
      'PUT /api/admin/experiments/exp1': { status: 409, body: { error: 'not_draft', message: 'Not a draft.' } },
    });
    renderEditor(experiment({ status: 'draft' }));
    expect(screen.getByRole('heading', { name: 'Edit “Shorter greeting”' })).toBeTruthy();
    expect(input('Campaign ids').value).toBe('123');
    expect(input('Flow version', arm('B')).value).toBe('default@3');
    expect(input('Offer', arm('B')).value).toBe('refundable');
    expect(input('Max refund rate (%)').value).toBe('10');
    fireEvent.click(screen.getByRole('button', { name: 'Save draft' }));
    expect(await screen.findByText(NOT_DRAFT)).toBeTruthy();
    expect(requests(fetchMock, 'PUT', '/api/admin/experiments/exp1')).toHaveLength(1);
  });
});
