import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { Button } from '../../components/Button';
import { Field } from '../../components/Field';
import { tasksApi, type Task } from './api';
import { checkNewTask, failureText, rowsAfterTyping } from './task-form';

type FormError = { field: 'name' | 'items' | null; message: string };

export function TaskForm({ onSaved, onCancel }: { onSaved: (task: Task) => void; onCancel: () => void }) {
  const formId = useId();
  const errorId = `${formId}-error`;
  const [name, setName] = useState('');
  const [rows, setRows] = useState<string[]>(['']);
  const [error, setError] = useState<FormError | null>(null);
  const [saving, setSaving] = useState(false);
  const nameRef = useRef<HTMLInputElement>(null);
  const itemRefs = useRef<(HTMLInputElement | null)[]>([]);

  useEffect(() => {
    nameRef.current?.focus();
  }, []);

  async function save(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (saving) return;
    const check = checkNewTask(name, rows);
    if (!check.ok) {
      setError({ field: check.field, message: check.message });
      (check.field === 'name' ? nameRef.current : itemRefs.current[0])?.focus();
      return;
    }
    setError(null);
    setSaving(true);
    try {
      onSaved(await tasksApi.create(check.name, check.items));
    } catch (cause) {
      setError({ field: null, message: failureText(cause) });
      setSaving(false);
    }
  }

  // Enter on a filled row goes on to the next row, as in a written list; on an empty row it saves.
  function onItemKeyDown(event: KeyboardEvent<HTMLInputElement>, index: number) {
    if (event.key !== 'Enter' || rows[index].trim() === '') return;
    const next = itemRefs.current[index + 1];
    if (!next) return;
    event.preventDefault();
    next.focus();
  }

  const invalid = (field: FormError['field']) => (error !== null && error.field === field ? true : undefined);
  const describedBy = (field: FormError['field']) => (invalid(field) ? errorId : undefined);

  return (
    <form className="tasks-form" onSubmit={(event) => void save(event)} noValidate aria-label="New task">
      <Field
        ref={nameRef}
        id={`${formId}-name`}
        label="Task name"
        value={name}
        onChange={(event) => setName(event.target.value)}
        aria-invalid={invalid('name')}
        aria-describedby={describedBy('name')}
        autoComplete="off"
      />

      <fieldset className="tasks-form-items">
        <legend>Items</legend>
        {/* Rows are only ever added at the end, so a row's position is a stable key. */}
        {rows.map((row, index) => (
          <Field
            key={index}
            ref={(element) => {
              itemRefs.current[index] = element;
            }}
            id={`${formId}-item-${index}`}
            label={`Item ${index + 1}`}
            labelClassName="tasks-sr-only"
            value={row}
            placeholder={`Item ${index + 1}`}
            onChange={(event) => setRows((current) => rowsAfterTyping(current, index, event.target.value))}
            onKeyDown={(event) => onItemKeyDown(event, index)}
            aria-invalid={index === 0 ? invalid('items') : undefined}
            aria-describedby={index === 0 ? describedBy('items') : undefined}
            autoComplete="off"
          />
        ))}
      </fieldset>

      {error && (
        <p id={errorId} className="form__error" role="alert">
          {error.message}
        </p>
      )}

      <div className="tasks-form-actions">
        <Button type="submit" disabled={saving}>
          {saving ? 'Saving...' : 'Save Task'}
        </Button>
        <Button variant="secondary" onClick={onCancel}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
