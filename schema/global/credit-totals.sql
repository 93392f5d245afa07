-- The cached totals of credit_accounts (balance, reserved, total_spent), kept by the statement
-- that changes their source row, in O(1): drizzle cannot declare triggers, so this file is their
-- one source, and `npm run db:triggers` copies it into a migration of schema/migrations/global
-- (schema/STORAGE.md, Credit totals). A change replayed under ON CONFLICT DO NOTHING writes no
-- row, so it fires nothing and cannot drift them.
DROP TRIGGER IF EXISTS credit_transactions_totals;
--> statement-breakpoint
DROP TRIGGER IF EXISTS credit_reservations_held;
--> statement-breakpoint
DROP TRIGGER IF EXISTS credit_reservations_settled;
--> statement-breakpoint
DROP TRIGGER IF EXISTS credit_reservations_released;
--> statement-breakpoint
-- A transaction moves the balance, and usage the total spent. A usage row (`usage:<hold key>`)
-- also settles its hold, first, so the hold leaves `reserved` before the charge leaves
-- `balance` (the CHECK reserved <= balance holds after each update): a settlement is that one
-- INSERT, whose amount the service capped at the balance less the user's other holds.
CREATE TRIGGER credit_transactions_totals AFTER INSERT ON credit_transactions
BEGIN
  UPDATE credit_reservations SET settled_at = NEW.created_at
    WHERE NEW.type = 'usage' AND substr(NEW.business_key, 1, 6) = 'usage:'
      AND execution_id = substr(NEW.business_key, 7) AND user_id = NEW.user_id AND settled_at IS NULL;
  UPDATE credit_accounts
    SET balance = balance + NEW.amount,
      total_spent = total_spent - CASE WHEN NEW.type = 'usage' THEN NEW.amount ELSE 0 END,
      updated_at = NEW.created_at
    WHERE user_id = NEW.user_id;
END;
--> statement-breakpoint
-- A hold is reserved while unsettled: from its insert until it is settled or released (deleted).
CREATE TRIGGER credit_reservations_held AFTER INSERT ON credit_reservations WHEN NEW.settled_at IS NULL
BEGIN
  UPDATE credit_accounts SET reserved = reserved + NEW.amount, updated_at = NEW.created_at WHERE user_id = NEW.user_id;
END;
--> statement-breakpoint
CREATE TRIGGER credit_reservations_settled AFTER UPDATE OF settled_at ON credit_reservations
  WHEN OLD.settled_at IS NULL AND NEW.settled_at IS NOT NULL
BEGIN
  UPDATE credit_accounts SET reserved = reserved - OLD.amount, updated_at = NEW.settled_at WHERE user_id = OLD.user_id;
END;
--> statement-breakpoint
CREATE TRIGGER credit_reservations_released AFTER DELETE ON credit_reservations WHEN OLD.settled_at IS NULL
BEGIN
  UPDATE credit_accounts SET reserved = reserved - OLD.amount WHERE user_id = OLD.user_id;
END;
