import type { InputHTMLAttributes, ReactNode, Ref } from 'react';

type FieldProps = Omit<InputHTMLAttributes<HTMLInputElement>, 'id'> & {
  /** The input's id; the label points at it, and the hint's id is `${id}-hint`. */
  id: string;
  label: ReactNode;
  /** A visually hidden label, say, where the placeholder shows what the field is for. */
  labelClassName?: string;
  /** Text under the input that the input names as its description. */
  hint?: ReactNode;
  ref?: Ref<HTMLInputElement>;
};

/** A form field: its label, the input and an optional hint under it. Other props go to the input. */
export function Field({ id, label, labelClassName, hint, ref, 'aria-describedby': describedBy, ...input }: FieldProps) {
  const hintId = hint ? `${id}-hint` : undefined;
  const description = [describedBy, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className="form__field">
      <label htmlFor={id} className={labelClassName}>
        {label}
      </label>
      <input ref={ref} id={id} aria-describedby={description} {...input} />
      {hint ? (
        <p id={hintId} className="form__hint">
          {hint}
        </p>
      ) : null}
    </div>
  );
}
