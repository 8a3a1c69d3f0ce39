package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"shoal/internal/identity"
	"shoal/internal/meta"
	"shoal/internal/object"
	"shoal/internal/volume"
)

// claimsFlags are the flags of shoal claims.
type claimsFlags struct {
	release string
	add     bool
}

// newClaimsCmd is `shoal claims`.
func newClaimsCmd() *cobra.Command {
	f := &claimsFlags{}
	cmd := &cobra.Command{
		Use:   "claims META-URL",
		Short: "List (or release) the volumes that claim a volume's bucket",
		Long: `Every volume records a claim in its bucket (volumes/<uuid>.json). A bucket
normally has one. 'shoal load' of a dump makes a copy that claims its
source's bucket too, since the two share blocks; while a bucket has more
than one claimant, no volume deletes objects from it (gc refuses, mounts
keep freed data), so that neither destroys blocks the other still reads.

Without flags, claims lists the claimants of the bucket of the volume at
META-URL. --release UUID removes a claim: do it once that volume is gone
for good (its engine deleted); a volume whose claim is released can no
longer be mounted. The last claim of a bucket cannot be released. --add claims the
bucket for the volume at META-URL beside the others (for a volume whose
claim was released by mistake, or restored by an older binary).`,
		Example: `  shoal claims sqlite:///var/lib/shoal/meta.db
  shoal claims --release 0c6f3a52-5d2e-4b8e-9f1d-2f4c8e0b7a11 sqlite:///var/lib/shoal/meta.db`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runClaims(cmd, args[0], f) },
	}
	cmd.Flags().StringVar(&f.release, "release", "", "remove the claim of volume UUID (that volume can no longer mount)")
	cmd.Flags().BoolVar(&f.add, "add", false, "claim the bucket for this volume, beside any other claimants")
	return cmd
}

// runClaims lists, releases or adds claims.
func runClaims(cmd *cobra.Command, metaURL string, f *claimsFlags) error {
	if f.add && f.release != "" {
		return withCode(ExitUsage, errors.New("claims: --add and --release exclude each other"))
	}
	ctx := cmd.Context()
	eng, vf, err := volume.Load(ctx, metaURL)
	if err != nil {
		return loadError(err, metaURL)
	}
	defer eng.Close()
	store, err := volume.OpenObjects(ctx, vf, nil)
	if err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	claims, err := identity.List(ctx, store)
	if err != nil {
		return err
	}
	switch {
	case f.release != "":
		return releaseClaim(ctx, cmd.OutOrStdout(), store, vf, claims, f.release)
	case f.add:
		if err := identity.Put(ctx, store, identity.For(vf, identity.HowAdd)); err != nil {
			return err
		}
		if claims, err = identity.List(ctx, store); err != nil {
			return err
		}
	}
	printClaims(cmd.OutOrStdout(), store, vf, claims)
	return nil
}

// releaseClaim removes uuid's claim, which must exist.
func releaseClaim(ctx context.Context, w io.Writer, store object.Store, vf meta.Format, claims []identity.Claim, uuid string) error {
	found := false
	for _, c := range claims {
		found = found || c.UUID == uuid
	}
	if !found {
		return withCode(ExitNotFound, fmt.Errorf("claims: no volume %s claims bucket %s (see 'shoal claims' for those that do)", uuid, store))
	}
	if len(claims) == 1 {
		// An unclaimed bucket is claimed by the next volume that opens it
		// (a volume from before claims), which may be the released one.
		return fmt.Errorf("claims: volume %s is the only claimant of bucket %s; releasing it would leave the bucket to whichever volume opens it next", uuid, store)
	}
	if err := identity.Release(ctx, store, uuid); err != nil {
		return err
	}
	fmt.Fprintf(w, "released the claim of volume %s on %s", uuid, store)
	if uuid == vf.UUID {
		fmt.Fprintf(w, " (this volume: it can no longer be mounted)")
	}
	fmt.Fprintln(w)
	return nil
}

// printClaims lists the claimants, marking this volume.
func printClaims(w io.Writer, store object.Store, vf meta.Format, claims []identity.Claim) {
	fmt.Fprintf(w, "Bucket      %s\n", store)
	for _, c := range claims {
		mark := ""
		if c.UUID == vf.UUID {
			mark = "  <- this volume"
		}
		fmt.Fprintf(w, "  %s%s\n", c, mark)
	}
	switch {
	case len(claims) == 0:
		fmt.Fprintf(w, "no claims: the first mount of this volume claims the bucket\n")
	case len(claims) > 1:
		fmt.Fprintf(w, "shared: no volume deletes objects from the bucket until one claim is left\n")
	}
}
