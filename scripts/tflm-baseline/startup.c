/* Start-up for the TFLM baseline image on QEMU mps2-an386 (Cortex-M4F): the vector table,
 * the reset handler (FPU on, .data copied, .bss zeroed, static constructors run, main
 * called) and the fault handlers. Symbols come from mps2_an386.ld. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
extern void (*__preinit_array_start[])(void), (*__preinit_array_end[])(void);
extern void (*__init_array_start[])(void), (*__init_array_end[])(void);

int main(void);
void SysTick_Handler(void);
void baseline_fault(const char *what);

void Reset_Handler(void) {
  /* CPACR: full access to CP10 and CP11 (the FPU), before any floating-point code. */
  *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
  __asm volatile("dsb\n\tisb" ::: "memory");
  uint32_t *src = &_sidata;
  for (uint32_t *dst = &_sdata; dst < &_edata;) *dst++ = *src++;
  for (uint32_t *dst = &_sbss; dst < &_ebss;) *dst++ = 0;
  for (void (**f)(void) = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();
  main();
  baseline_fault("main returned");
}

static void Nmi_Handler(void) { baseline_fault("NMI"); }
static void HardFault_Handler(void) { baseline_fault("HardFault"); }
static void MemManage_Handler(void) { baseline_fault("MemManage fault"); }
static void BusFault_Handler(void) { baseline_fault("BusFault"); }
static void UsageFault_Handler(void) { baseline_fault("UsageFault"); }
static void Other_Handler(void) { baseline_fault("unexpected exception"); }

__attribute__((section(".vectors"), used)) void (*const g_vectors[16])(void) = {
    (void (*)(void))(&_estack),
    Reset_Handler,
    Nmi_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0,
    0,
    0,
    0,
    Other_Handler, /* SVCall */
    Other_Handler, /* DebugMonitor */
    0,
    Other_Handler, /* PendSV */
    SysTick_Handler,
};
