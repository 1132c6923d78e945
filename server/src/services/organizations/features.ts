import { eq } from 'drizzle-orm';
import { organizations, users } from '@fieldchart/schema/db';
import type { EffectiveConfigRecord, OrganizationConfigBody, PersonalFeaturesBody } from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { NotFound } from '../../errors.ts';
import type { Principal } from '../auth/sessions.ts';
import { applyOverridePatch, effectiveConfig, organizationSettingsOf } from './effective-config.ts';
import { requireAdmin, seatOf } from './seats.ts';

/**
 * Reads and writes what effectiveConfig resolves: organization overrides (admins, PUT
 * /my-organization/config) and personal overrides (PUT /my-settings/features, kept on the
 * user and applied only while solo). Keys and value types are checked by the request schemas.
 */
export function createFeatures(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  async function resolve(tx: Db, userId: string): Promise<EffectiveConfigRecord> {
    const [user] = await tx.select({ featureOverrides: users.featureOverrides }).from(users).where(eq(users.id, userId));
    if (!user) throw new NotFound('User not found', 'user_not_found');
    const seat = await seatOf(tx, userId);
    const [org] = seat ? await tx.select().from(organizations).where(eq(organizations.id, seat.organizationId)) : [];
    return effectiveConfig({
      organization: org ? organizationSettingsOf(org) : null,
      personalOverrides: user.featureOverrides,
    });
  }

  return {
    /** GET /my-organization/config: the caller's effective configuration, solo or seated. */
    config(principal: Principal): Promise<EffectiveConfigRecord> {
      return resolve(db, principal.userId);
    },

    /** PUT /my-organization/config (admin): patches the stored overrides; null clears one. */
    async updateOrganization(principal: Principal, body: OrganizationConfigBody): Promise<EffectiveConfigRecord> {
      const seat = await requireAdmin(db, principal);
      return db.transaction(async (tx) => {
        const [org] = await tx.select().from(organizations).where(eq(organizations.id, seat.organizationId)).for('update');
        if (!org) throw new NotFound('Organization not found', 'organization_not_found');
        await tx
          .update(organizations)
          .set({
            featureOverrides: applyOverridePatch<boolean>(org.featureOverrides, body.features),
            terminologyOverrides: applyOverridePatch<string>(org.terminologyOverrides, body.terminology),
            updatedAt: clock.now(),
          })
          .where(eq(organizations.id, org.id));
        return resolve(tx, principal.userId);
      });
    },

    /**
     * PUT /my-settings/features: stores personal overrides whether or not the caller is
     * seated, and answers the effective flags — which, while seated, are the organization's.
     */
    async updatePersonal(principal: Principal, body: PersonalFeaturesBody): Promise<{ config: EffectiveConfigRecord; seated: boolean }> {
      return db.transaction(async (tx) => {
        const [user] = await tx.select({ featureOverrides: users.featureOverrides }).from(users).where(eq(users.id, principal.userId)).for('update');
        if (!user) throw new NotFound('User not found', 'user_not_found');
        await tx
          .update(users)
          .set({ featureOverrides: applyOverridePatch<boolean>(user.featureOverrides, body.features), updatedAt: clock.now() })
          .where(eq(users.id, principal.userId));
        const config = await resolve(tx, principal.userId);
        return { config, seated: config.source === 'organization' };
      });
    },
  };
}

export type Features = ReturnType<typeof createFeatures>;
